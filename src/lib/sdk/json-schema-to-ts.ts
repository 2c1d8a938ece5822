/**
 * Renders the JSON Schemas that zod produces for the tool table as TypeScript
 * type expressions. Only the subset the table uses is supported; anything else
 * renders as `unknown` rather than guessing, so a new construct in the table
 * shows up as a visible type change in review.
 */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  additionalProperties?: boolean | JsonSchema;
  description?: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function schemaToTs(schema: JsonSchema, indent = ''): string {
  // The ResultRef handle becomes the SDK's ResultRef class, with its slicing methods.
  if (schema.properties?.type?.const === 'ResultRef') return 'ResultRef';
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return variants.map((v) => schemaToTs(v, indent)).join(' | ');
  if (Array.isArray(schema.type)) return schema.type.map((t) => schemaToTs({ ...schema, type: t }, indent)).join(' | ');
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return schema.items ? `Array<${schemaToTs(schema.items, indent)}>` : 'unknown[]';
    case 'object':
      return objectToTs(schema, indent);
    default:
      return 'unknown';
  }
}

function objectToTs(schema: JsonSchema, indent: string): string {
  const props = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const inner = `${indent}  `;
  const lines: string[] = [];
  for (const [key, prop] of Object.entries(props)) {
    if (prop.description) lines.push(`${inner}/** ${prop.description.replaceAll('*/', '*\\/')} */`);
    const name = IDENT.test(key) ? key : JSON.stringify(key);
    lines.push(`${inner}${name}${required.has(key) ? '' : '?'}: ${schemaToTs(prop, inner)};`);
  }
  const extra = schema.additionalProperties;
  if (extra && typeof extra === 'object') lines.push(`${inner}[key: string]: ${schemaToTs(extra, inner)};`);
  if (lines.length === 0) return extra === false ? 'Record<string, never>' : 'Record<string, unknown>';
  return `{\n${lines.join('\n')}\n${indent}}`;
}

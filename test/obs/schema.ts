import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';

import { repoRoot } from '../helpers/cli.js';

// ajv and ajv-formats are CommonJS: take the default export whichever way the loader wraps it.
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as typeof AjvModule.default;
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as typeof addFormatsModule.default;

/** A validator for one of the published schemas in docs/schemas/; throws with ajv's errors on a mismatch. */
export function schemaValidator(name: 'explain' | 'fleet'): (value: unknown) => void {
  const schema = JSON.parse(readFileSync(join(repoRoot, 'docs/schemas', `${name}.schema.json`), 'utf8')) as object;
  const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  return (value) => {
    if (!validate(value)) throw new Error(`${name} output does not match docs/schemas/${name}.schema.json:\n${JSON.stringify(validate.errors, null, 2)}`);
  };
}

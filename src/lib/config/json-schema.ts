import { z } from 'zod';

import { configSchema } from './schema.js';

/** The JSON Schema of config.yaml (input side: defaults are optional), as published in docs/. */
export function renderConfigJsonSchema(): string {
  const schema = z.toJSONSchema(configSchema, { io: 'input', target: 'draft-7' }) as Record<string, unknown>;
  return `${JSON.stringify({ ...schema, title: 'comis config.yaml' }, null, 2)}\n`;
}

// Writes docs/config.schema.json from the same zod schema that validates
// config.yaml, so editors and comis can never disagree. Run by `npm run build`.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { renderConfigJsonSchema } = await import(join(root, 'dist/lib/config/json-schema.js'));
writeFileSync(join(root, 'docs/config.schema.json'), renderConfigJsonSchema());
process.stdout.write('docs/config.schema.json written\n');

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { tempDir } from './temp.js';

/** A minimal valid SKILL.md with `body` after the frontmatter. */
export const SKILL = (name: string, body: string): string => `---\nname: ${name}\ndescription: A ${name} skill.\n---\n\n${body}\n`;

/** A temp repository (it has a .git) holding `files`, by relative path. */
export function skillTree(files: Record<string, string>): string {
  const root = tempDir();
  mkdirSync(join(root, '.git'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

/** frontmatter_spec: Agent Skills specification checks (WARN by default, a separate class from security findings). */
import type { SpecRule } from './types.js';

function spec(id: string, description: string, help: string): SpecRule {
  return { id, kind: 'spec', category: 'frontmatter_spec', severity: 'WARN', description, help, worstCase: 'x' };
}

export const SPEC_RULES: readonly SpecRule[] = [
  spec('SPEC_FRONTMATTER_MISSING', 'No YAML frontmatter (--- block) at the top of SKILL.md', 'Start SKILL.md with a `---` YAML block holding at least `name` and `description`.'),
  spec('SPEC_YAML_INVALID', 'Frontmatter is not valid YAML (or not a mapping)', 'Fix the YAML syntax; the message names the line.'),
  spec('SPEC_NAME_MISSING', '`name` is required', 'Add `name:` (lowercase letters, digits and hyphens, equal to the directory name).'),
  spec('SPEC_NAME_FORMAT', '`name` must be 1-64 chars of lowercase letters, digits and `-`, with no leading, trailing or double `-`', 'Rename the skill, e.g. `pdf-tools`.'),
  spec('SPEC_NAME_MISMATCH', '`name` must equal the skill directory name', 'Rename the directory or the `name` so they match.'),
  spec('SPEC_DESCRIPTION_MISSING', '`description` is required', 'Add a `description:` of 1-1024 characters saying what the skill does and when to use it.'),
  spec('SPEC_DESCRIPTION_LENGTH', '`description` must be 1-1024 characters', "Shorten the description; it reaches every session's system prompt."),
  spec('SPEC_COMPATIBILITY_LENGTH', '`compatibility` must be a string of at most 500 characters', 'Shorten `compatibility`.'),
  spec('SPEC_LICENSE_TYPE', '`license` must be a string', 'Use a license name or a path to the license file.'),
  spec('SPEC_METADATA_TYPE', '`metadata` must map string keys to string values', 'Quote values so every metadata value is a string.'),
  spec('SPEC_ALLOWED_TOOLS_TYPE', '`allowed-tools` must be a string or a list of strings', 'Use `allowed-tools: Read Grep` or a YAML list of tool names.'),
  spec('SPEC_UNKNOWN_KEY', 'Frontmatter key not in the Agent Skills specification', 'Move custom fields under `metadata:`.'),
  spec('SPEC_DUPLICATE_KEY', 'Frontmatter key given twice (parsers disagree on which value wins)', 'Keep one occurrence of the key.'),
];

/**
 * THE rule table of `comis skill scan`: every rule the scanner, the
 * frontmatter validator and the file walker can report, with its ID,
 * category, severity, description and help. The scanner, the SARIF
 * reporter, the docs and the tests all read this one table.
 *
 * ReDoS contract: every regex here runs in time linear in its input. Each
 * uses bounded quantifiers (`{0,N}`), at most one bounded wildcard per
 * alternative, no nested unbounded repetition, and no quantified group whose
 * iterations can overlap. `worstCase` is the string the ReDoS test repeats
 * to 1 MB for that rule; the benchmark reports the time per rule.
 */
import { CREDENTIAL_RULES } from './rules/credentials.js';
import { CRYPTO_RULES } from './rules/crypto.js';
import { DESTRUCTIVE_RULES } from './rules/destructive.js';
import { ENV_RULES } from './rules/env.js';
import { EXEC_RULES } from './rules/exec.js';
import { HIDDEN_RULES } from './rules/hidden.js';
import { LURE_RULES } from './rules/lures.js';
import { NETWORK_RULES } from './rules/network.js';
import { OBFUSCATION_RULES } from './rules/obfuscation.js';
import { PERSISTENCE_RULES } from './rules/persistence.js';
import { PROMPT_INJECTION_RULES } from './rules/prompt-injection.js';
import { RESOURCE_ABUSE_RULES } from './rules/resource-abuse.js';
import { SPEC_RULES } from './rules/spec.js';
import { SUPPLY_CHAIN_RULES } from './rules/supply-chain.js';
import type { Rule } from './rules/types.js';
import { XML_RULES } from './rules/xml.js';

export type { CooccurRule, PatternRule, Rule, RuleMatchContext } from './rules/types.js';

/** One file per category under rules/; the order here is the order of SARIF `rules` and of the docs table. */
export const RULES: readonly Rule[] = [
  ...EXEC_RULES,
  ...ENV_RULES,
  ...CRYPTO_RULES,
  ...NETWORK_RULES,
  ...LURE_RULES,
  ...CREDENTIAL_RULES,
  ...OBFUSCATION_RULES,
  ...XML_RULES,
  ...HIDDEN_RULES,
  ...PROMPT_INJECTION_RULES,
  ...PERSISTENCE_RULES,
  ...SUPPLY_CHAIN_RULES,
  ...RESOURCE_ABUSE_RULES,
  ...DESTRUCTIVE_RULES,
  ...SPEC_RULES,
];

export const RULES_BY_ID: ReadonlyMap<string, Rule> = new Map(RULES.map((r) => [r.id, r]));

/** The rule or a thrown error: rule IDs in code must exist in the table. */
export function ruleById(id: string): Rule {
  const rule = RULES_BY_ID.get(id);
  if (!rule) throw new Error(`unknown rule ${id}`);
  return rule;
}

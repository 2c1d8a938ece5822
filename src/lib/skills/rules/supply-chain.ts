/** supply_chain: installs from remote, unpinned sources. Assembled into the one table by ../rules.ts. */
import type { Rule } from './types.js';

export const SUPPLY_CHAIN_RULES: readonly Rule[] = [
  {
    id: 'SUPPLY_REMOTE_INSTALL',
    kind: 'pattern',
    category: 'supply_chain',
    severity: 'WARN',
    description: 'Package install from a remote requirements file or archive URL, or pip under sudo',
    help: 'Remote requirement lists and archives change after review, and sudo pip runs setup code as root. Pin versions and hashes.',
    pattern:
      /\bpip[23]?\s{1,4}install\b[^\n]{0,100}?\s-r\s{0,4}["']?https?:\/\/|\bsudo\s{1,8}(?:-\S{1,4}\s{1,8}){0,2}(?:pip[23]?|python[23]?\s{1,4}-m\s{1,4}pip)\s{1,4}install\b|\bnpm\s{1,4}(?:install|i)\s{1,4}(?:-g\s{1,4})?https?:\/\/[^\s]{1,200}\.tgz\b|\bpip[23]?\s{1,4}install\s{1,4}(?:--\S{1,30}\s{1,4}){0,3}https?:\/\/[^\s]{1,200}\.(?:whl|tar\.gz|zip)\b/gi,
    triggers: ['pip', 'npm'],
    worstCase: 'pip install pip ',
  },
  {
    id: 'SUPPLY_REGISTRY_OVERRIDE',
    kind: 'pattern',
    category: 'supply_chain',
    severity: 'WARN',
    description: 'Points a package manager at a non-default registry or index (npm/yarn registry, pip index-url, extra-index-url)',
    help: 'Redirecting npm, yarn, pip or uv to another registry lets that host serve any package under a trusted name (dependency confusion). A skill must not change where the user installs from; document the mirror instead.',
    pattern:
      /(?:^|[\s;&|"'`(])(?:registry|@[\w-]{1,60}:registry|index-url|extra-index-url|PIP_INDEX_URL|PIP_EXTRA_INDEX_URL|UV_INDEX_URL|UV_EXTRA_INDEX_URL|UV_INDEX|NPM_CONFIG_REGISTRY|YARN_REGISTRY)\b["']?(?:\s{0,4}[=:]\s{0,4}|\s{1,4})["'$]?[{(]?[^\s"'`]{0,80}|\b(?:npm|pnpm|yarn)\s{1,4}config\s{1,4}set\s{1,4}(?:@[\w-]{1,60}:)?registry\b[^\n]{0,200}|\bpip[23]?\s{1,4}config\s{1,4}set\s{1,4}(?:global|user|site)\.(?:extra-)?index-url\b[^\n]{0,200}|--(?:extra-)?index-url[= ]\s{0,4}\S{1,200}|--registry[= ]\s{0,4}\S{1,200}/gim,
    triggers: ['registry', 'index-url', 'index_url', 'uv_index'],
    check: (ctx) => {
      const text = ctx.match[0];
      // The official registries are the default, not an override; a bare word "registry" in prose is not a setting.
      if (/registry\.npmjs\.org|registry\.yarnpkg\.com|pypi\.org\/simple|(?:^|\/\/)pypi\.org|files\.pythonhosted\.org/i.test(text)) return false;
      return /https?:\/\/|\$\{?\w|[=:]\s{0,4}["']?\S/.test(text.replace(/^[\s;&|"'`(]/, '')) && /(?:[=:]|config\s{1,4}set|--(?:extra-)?index-url|--registry)/i.test(text) && ctx.region !== 'prose';
    },
    worstCase: 'registry= registry=',
  },
];

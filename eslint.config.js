// ESLint flat config. What it holds the code to, and why:
// - typescript-eslint's recommended rules, plus no-floating-promises (type-aware: a
//   dropped promise is a lost error or an unbounded task) on the TypeScript sources;
// - no console in src/ (src/lib knows nothing of the terminal; commands write through
//   src/cli/output.ts, which uses process.stdout/stderr on purpose);
// - the layering of DESIGN.md §9, as import-x/no-restricted-paths zones below.
// Unused exports are knip's job (knip.json, `npm run lint:exports`).
import js from '@eslint/js';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

const lib = './src/lib';
/** Every subsystem of src/lib and the top-level utilities (errors, style, suggest). */
const SUBSYSTEMS = ['capabilities', 'capsocket', 'config', 'confine', 'coordinator', 'jail', 'mcp', 'model', 'net', 'obs', 'orchestrate', 'policy', 'redact', 'resultref', 'sdk', 'skills', 'store', 'tools', 'untrusted', 'web'];
const sub = (name) => `${lib}/${name}`;
const others = (...keep) => SUBSYSTEMS.filter((s) => !keep.includes(s)).map(sub);

/**
 * The layering (DESIGN.md §9). `target` may not import from `from`. The tools,
 * web and mcp subsystems sit side by side: they may use capabilities,
 * resultref, policy, untrusted, confine, redact, config, net, the socket's wire
 * (capsocket/protocol.ts), the jail's host helpers (jail/host.ts) and errors,
 * never orchestrate, coordinator, the store or anything above src/lib. Front
 * ends that compose orchestrate (`comis mcp serve`) live in src/cli.
 */
const LAYERS = [
  {
    target: lib,
    from: ['./src/commands', './src/ui', './src/cli'],
    message: 'src/lib never imports src/commands, src/ui or src/cli: the library knows nothing of the CLI or the terminal.',
  },
  {
    target: sub('skills'),
    from: others('skills'),
    message: 'skills imports no other subsystem (errors/style only), so `comis skill scan` stays small and fast.',
  },
  {
    target: sub('jail'),
    from: [sub('tools'), sub('capsocket'), sub('store'), sub('orchestrate'), sub('coordinator'), sub('web'), sub('mcp'), sub('resultref')],
    message: 'jail knows nothing of tools, the socket protocol, the store or orchestrate: orchestrate composes them.',
  },
  {
    target: others('store', 'orchestrate', 'coordinator', 'obs'),
    from: sub('store'),
    message: 'the store is reached only by orchestrate, coordinator, obs (and the commands).',
  },
  {
    target: sub('capabilities'),
    from: [sub('tools'), sub('web'), sub('mcp'), sub('orchestrate'), sub('coordinator'), sub('capsocket'), sub('resultref'), sub('store'), sub('obs')],
    message: 'capabilities holds the table and leases and imports no tool implementation: tools register against it.',
  },
  {
    target: [sub('confine'), sub('untrusted'), sub('redact')],
    from: [...others(), './src/lib/style.ts', './src/lib/suggest.ts'],
    message: 'confine, untrusted and redact are leaves: they import nothing of comis but errors.',
  },
  {
    target: sub('config'),
    from: others('config', 'redact', 'net'),
    message: 'config is a leaf: it registers secrets with redact, parses addresses with net and imports no other subsystem (never obs).',
  },
  {
    target: sub('net'),
    from: [...others('net'), './src/lib/style.ts', './src/lib/suggest.ts'],
    message: 'net (the pure address rules of the SSRF guard) is a leaf: config validates with it and web enforces it, so it imports nothing of comis.',
  },
  {
    target: sub('policy'),
    from: others('policy', 'capabilities', 'config', 'untrusted', 'redact', 'confine'),
    message: 'policy is a leaf beside capabilities and config: it imports no upper layer.',
  },
  ...['tools', 'web', 'mcp'].map((name) => ({
    target: sub(name),
    from: [sub('orchestrate'), sub('coordinator'), sub('store'), sub('obs'), sub('skills'), sub('sdk')],
    message: `${name} (a tool-level subsystem) may use capabilities, resultref, policy, untrusted, confine, redact, config, net, the socket's wire and errors only; never orchestrate, coordinator or the store (orchestrate injects what it needs of them).`,
  })),
  // jail is a leaf (DESIGN.md §9): its host helpers (finding bwrap in trusted places, /proc reads) are
  // utilities a sibling may use, e.g. the MCP client's reaping transport. Making a jail is orchestrate's.
  ...['tools', 'web', 'mcp'].map((name) => ({
    target: sub(name),
    from: sub('jail'),
    except: ['./host.ts'],
    message: `${name} may use the jail's host helpers (jail/host.ts) only: orchestrate composes jails, tools never start one.`,
  })),
  ...['tools', 'web', 'mcp'].map((name) => ({
    target: sub(name),
    from: `${sub('capsocket')}/server.ts`,
    message: 'a tool speaks the wire (capsocket/protocol.ts), never imports the socket server.',
  })),
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'reports/**', '.stryker-tmp/**', 'docs/**', 'examples/**', 'src/lib/sdk/runtime/**/*.py'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // `_`-named bindings are deliberately unused (destructuring a field away, an unused parameter).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    // comis's sanitizers, detectors and log/terminal scrubbers match control characters on
    // purpose (NUL, C0, ESC): for this code base the rule flags the feature, not a mistake.
    rules: { 'no-control-regex': 'off' },
  },
  {
    // Tests walk parsed --json output and NDJSON events, which have no static type.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', performance: 'readonly', AbortController: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', structuredClone: 'readonly', queueMicrotask: 'readonly', setImmediate: 'readonly', fetch: 'readonly' } },
  },
  {
    files: ['src/**'],
    rules: { 'no-console': 'error' },
  },
  {
    files: ['src/**'],
    plugins: { 'import-x': importX },
    // The sources import `./x.js` meaning `./x.ts` (NodeNext): resolve them to the file that exists.
    settings: { 'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'], extensionAlias: { '.js': ['.ts', '.tsx', '.js'] } })] },
    rules: { 'import-x/no-restricted-paths': ['error', { zones: LAYERS }] },
  },
);

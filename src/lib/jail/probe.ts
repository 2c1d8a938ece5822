/**
 * `comis jail probe` as data: which sandbox provider this machine has, the
 * smoke test of the real hardened jail (each check reported), and what the
 * orchestrate runtime needs — node, python3, jq (each resolved to its real
 * path and run once INSIDE the jail) and whether the optional DuckDB package
 * is installed — with an install hint for every missing part.
 *
 * The command uses {@link probeJailCached}, which answers from the last
 * working report while nothing it rests on changed (PATH included, so
 * `PATH=… comis jail probe` answers for that PATH), and otherwise looks afresh.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import { isComisError } from '../errors.js';
import { makeOwnedTempDir } from '../temp-dir.js';
import { deriveJailUid, isRoot } from './host.js';
import { resolveInterpreter, resolveJq } from './interpreters.js';
import { prepareWritableDir } from './mounts.js';
import { DEFAULT_JAIL_LIMITS, detectSandboxProviderFresh, readUsernsFacts, type DetectOptions, type WorkingJail } from './provider.js';
import { startJail } from './spawn.js';
import type { JailMount, ResolvedInterpreter, SandboxProblem, SandboxProviderName, SmokeCheck } from './types.js';

/** One program orchestrate scripts run with, as the probe found it. */
export interface RuntimePart {
  name: 'node' | 'python3' | 'jq';
  found: boolean;
  /** Real host path, symlinks resolved. */
  path?: string;
  version?: string;
  /** What the jail binds read-only for it (empty when /usr has it). */
  mounts?: JailMount[];
  /** It ran inside the real jail (undefined when no working jail to try). */
  runsInJail?: boolean;
  jailError?: string;
  /** Why it is missing or broken, when it is. */
  error?: string;
  hint?: string;
}

/** The optional DuckDB package (resolved, never loaded). */
export interface DuckdbPart {
  name: '@duckdb/node-api';
  found: boolean;
  path?: string;
  version?: string;
  hint?: string;
}

/** Everything `comis jail probe` found; `working` decides its exit code. */
export interface ProbeReport {
  platform: string;
  arch: string;
  /** A working jail is available: orchestrate can run scripts. Decides the exit code. */
  working: boolean;
  provider: SandboxProviderName;
  binary?: string;
  version?: string;
  problem?: SandboxProblem;
  /** How the jail is entered: as root comis drops to an unprivileged uid with setpriv first. */
  runAs?: { root: boolean; via: 'setpriv' | 'own uid' };
  userNamespaces: { sysctls: Record<string, string>; findings: string[]; insideUserNamespace: boolean };
  /** The smoke test's checks, in the real jail. */
  checks: SmokeCheck[];
  runtime: { node: RuntimePart; python3: RuntimePart; jq: RuntimePart; duckdb: DuckdbPart };
  /** Every missing or broken part with what to do about it. */
  missing: { part: string; hint: string }[];
}

const IN_JAIL_TIMEOUT_MS = 20_000;

/** Resolves a package's package.json without importing the package. */
function resolveDuckdb(): DuckdbPart {
  const name = '@duckdb/node-api' as const;
  try {
    const pkgJson = createRequire(import.meta.url).resolve(`${name}/package.json`);
    const version = (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version?: string }).version;
    return { name, found: true, path: dirname(pkgJson), ...(version ? { version } : {}) };
  } catch {
    return { name, found: false, hint: 'npm install @duckdb/node-api (optional: without it sql/jsonpath slicing of ResultRefs is unavailable)' };
  }
}

function resolvePart(name: RuntimePart['name'], pathEnv: string | undefined): { part: RuntimePart; interp?: ResolvedInterpreter } {
  try {
    const interp = name === 'jq' ? resolveJq({ pathEnv }) : resolveInterpreter(name, pathEnv === undefined ? {} : { pathEnv });
    return { part: { name, found: true, path: interp.hostPath, version: interp.version, mounts: interp.mounts }, interp };
  } catch (err) {
    if (!isComisError(err)) throw err;
    return { part: { name, found: false, error: err.message, hint: err.hint ?? `Install ${name}.` } };
  }
}

const VERSION_ARGS: Record<RuntimePart['name'], string[]> = {
  node: ['-e', 'process.stdout.write(process.version)'],
  python3: ['-I', '-c', 'import sys;print(sys.version.split()[0])'],
  jq: ['--version'],
};

/** Runs `interp --version`-like in the real jail; resolves with what it printed or why it failed. */
async function runInJail(name: RuntimePart['name'], interp: ResolvedInterpreter, jail: WorkingJail): Promise<{ ok: boolean; output: string }> {
  const scratch = makeOwnedTempDir('comis-probe-'); // swept by the next comis if this one is killed before the finally
  const ws = join(scratch, 'ws');
  mkdirSync(ws);
  try {
    const hostUid = isRoot() ? deriveJailUid(ws) : (process.getuid?.() ?? 65534);
    prepareWritableDir(ws, hostUid);
    const child = startJail(
      {
        command: [interp.jailPath, ...interp.args, ...VERSION_ARGS[name]],
        mounts: [...interp.mounts, { kind: 'rw', source: ws, target: '/workspace' }],
        cwd: '/workspace',
        env: { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8' },
        limits: DEFAULT_JAIL_LIMITS,
        hostUid,
        // The supervisor, not only a timer of ours: should comis die while the jail starts, bubblewrap's
        // child (cloned before bubblewrap sets its own parent-death signal) would be left blocked
        // forever; the supervisor's SIGKILL to its process group ends it (plan.ts supervisorArgs).
        deadlineMs: IN_JAIL_TIMEOUT_MS,
      },
      jail.tools,
      jail.arch,
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    const timer = setTimeout(() => child.kill(), IN_JAIL_TIMEOUT_MS + 1_000); // the second line
    const exit = await child.exited;
    clearTimeout(timer);
    if (exit.code === 0) return { ok: true, output: out.trim() };
    const why = err.trim().split('\n').filter(Boolean).pop() ?? `exit ${exit.code ?? exit.signal}`;
    return { ok: false, output: exit.killedBy ? `timed out after ${IN_JAIL_TIMEOUT_MS} ms` : why };
  } catch (e) {
    return { ok: false, output: (e as Error).message };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Probes this machine for this process's own PATH, answered from the last
 * working report while nothing it rests on changed (see probe-cache.ts).
 * Never throws for a missing or broken part: every finding is in the report,
 * and `working` says whether orchestrate can run.
 */
export async function probeJailCached(cacheFile: string): Promise<ProbeReport> {
  const { readCachedProbe, writeCachedProbe } = await import('./probe-cache.js');
  const hit = readCachedProbe(cacheFile);
  if (hit) return hit;
  const { report, tools } = await probeFresh({});
  writeCachedProbe(cacheFile, report, tools ? Object.values(tools).filter((t): t is string => typeof t === 'string' && t.startsWith('/')) : []);
  return report;
}

async function probeFresh(opts: DetectOptions): Promise<{ report: ProbeReport; tools?: WorkingJail['tools'] }> {
  const detection = detectSandboxProviderFresh(opts);
  const info = detection.info;
  const working = info.provider === 'bwrap' && !info.problem && detection.tools !== undefined && detection.arch !== undefined;
  const parts = (['node', 'python3', 'jq'] as const).map((n) => resolvePart(n, opts.pathEnv));
  if (working) {
    const jail = { tools: detection.tools!, arch: detection.arch! };
    await Promise.all(
      parts.map(async ({ part, interp }) => {
        if (!interp) return;
        const res = await runInJail(part.name, interp, jail);
        part.runsInJail = res.ok;
        if (!res.ok) {
          part.jailError = res.output;
          part.hint = `${part.name} runs on the host but not in the jail (${res.output}); check that ${part.path} and its libraries are readable by an unprivileged user.`;
        }
      }),
    );
  }
  const [node, python3, jq] = parts.map((p) => p.part) as [RuntimePart, RuntimePart, RuntimePart];
  const duckdb = resolveDuckdb();
  const missing: ProbeReport['missing'] = [];
  if (info.problem) missing.push({ part: info.provider === 'none' ? 'sandbox provider' : info.provider, hint: info.problem.hint });
  for (const p of [node, python3, jq]) {
    if (p.hint) missing.push({ part: p.name, hint: p.hint });
  }
  if (!duckdb.found) missing.push({ part: duckdb.name, hint: duckdb.hint! });
  const platform = opts.platform ?? process.platform;
  const userns = detection.userns ?? (platform === 'linux' ? readUsernsFacts(opts.sysctlRoot) : { sysctls: {}, findings: [], insideUserNamespace: false });
  const report: ProbeReport = {
    platform,
    arch: process.arch,
    working,
    provider: info.provider,
    ...(info.binary ? { binary: info.binary } : {}),
    ...(info.version ? { version: info.version } : {}),
    ...(info.problem ? { problem: info.problem } : {}),
    ...(info.mode ? { runAs: { root: info.mode.root, via: info.mode.root ? ('setpriv' as const) : ('own uid' as const) } } : {}),
    userNamespaces: { sysctls: userns.sysctls, findings: userns.findings, insideUserNamespace: userns.insideUserNamespace },
    checks: info.checks ?? [],
    runtime: { node, python3, jq, duckdb },
    missing,
  };
  return { report, ...(detection.tools ? { tools: detection.tools } : {}) };
}

/**
 * `grep`: search workspace files for a pattern, daemon-side.
 *
 * The pattern is script-controlled, so a catastrophic regular expression
 * must not stall the runner: the search runs in a worker thread that is
 * terminated at a deadline. The worker uses the same open-then-verify
 * confinement as every daemon-side reader (see confined-fs.ts).
 */
import { Worker } from 'node:worker_threads';

import { CapCallError } from '../capsocket/server.js';
import { maybeMaterializeValue } from '../resultref/materialize.js';
import type { ToolContext } from './context.js';
import { resolveConfined } from './confined-fs.js';

export interface GrepArgs {
  pattern: string;
  path?: string | undefined;
  glob?: string | undefined;
  ignoreCase?: boolean | undefined;
  literal?: boolean | undefined;
  maxMatches?: number | undefined;
}

export interface GrepLimits {
  timeoutMs: number;
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
}

export const DEFAULT_GREP_LIMITS: GrepLimits = {
  timeoutMs: 10_000,
  maxFiles: 20_000,
  maxFileBytes: 8 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
};

/** Converts a glob (`*`, `**`, `?`, `{a,b}`) to an anchored regular expression source. */
export function globToRegExpSource(glob: string): string {
  let out = '';
  let i = 0;
  let inBraces = false;
  while (i < glob.length) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      i += 2;
      if (glob[i] === '/') {
        i++;
        out += '(?:.*/)?';
      } else out += '.*';
      continue;
    }
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '{' && !inBraces) {
      inBraces = true;
      out += '(?:';
    } else if (c === '}' && inBraces) {
      inBraces = false;
      out += ')';
    } else if (c === ',' && inBraces) out += '|';
    else out += c.replace(/[.+^$()|[\]\\]/g, '\\$&');
    i++;
  }
  if (inBraces) throw new CapCallError('invalid_params', 'glob has an unclosed "{"');
  return `^${out}$`;
}

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { rootReal, startRel, source, flags, globSource, maxMatches, limits } = workerData;
const re = new RegExp(source, flags);
const globRe = globSource ? new RegExp(globSource) : null;
const matches = [];
let filesScanned = 0, totalBytes = 0, truncated = false;
const isInside = (real) => real === rootReal || real.startsWith(rootReal + '/');
function scanFile(rel) {
  if (matches.length >= maxMatches || filesScanned >= limits.maxFiles || totalBytes >= limits.maxTotalBytes) { truncated = true; return; }
  let fd;
  try { fd = fs.openSync(rootReal + '/' + rel, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK); } catch { return; }
  try {
    const real = fs.readlinkSync('/proc/self/fd/' + fd);
    if (!isInside(real)) return;
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > limits.maxFileBytes) return;
    const buf = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < st.size) { const n = fs.readSync(fd, buf, got, st.size - got, got); if (n === 0) break; got += n; }
    filesScanned++;
    totalBytes += got;
    const data = buf.subarray(0, got);
    if (data.subarray(0, 8000).includes(0)) return; // binary
    const relOut = real.slice(rootReal.length + 1);
    const lines = data.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      re.lastIndex = 0;
      if (re.test(lines[i])) {
        matches.push({ path: relOut, line: i + 1, text: lines[i].length > 1000 ? lines[i].slice(0, 1000) : lines[i] });
        if (matches.length >= maxMatches) { truncated = true; return; }
      }
    }
  } finally { fs.closeSync(fd); }
}
function walk(rel) {
  let entries;
  try { entries = fs.readdirSync(rel === '.' ? rootReal : rootReal + '/' + rel, { withFileTypes: true }); } catch { return; }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (truncated) return;
    const child = rel === '.' ? e.name : rel + '/' + e.name;
    if (e.isDirectory()) walk(child);
    else if (e.isFile() && (!globRe || globRe.test(child))) scanFile(child);
  }
}
let st;
try { st = fs.lstatSync(startRel === '.' ? rootReal : rootReal + '/' + startRel); } catch { st = null; }
if (!st) parentPort.postMessage({ error: { code: 'not_found', message: 'no such file or directory: ' + startRel } });
else {
  if (st.isDirectory()) walk(startRel);
  else if (st.isFile()) scanFile(startRel);
  parentPort.postMessage({ result: { matches, filesScanned, truncated } });
}
`;

export async function grepTool(ctx: ToolContext, args: GrepArgs, limits: GrepLimits = DEFAULT_GREP_LIMITS): Promise<unknown> {
  const startRel = resolveConfined(ctx.workspaceReal, args.path ?? '.', ctx.jailWorkspace);
  const flags = args.ignoreCase ? 'i' : '';
  const source = args.literal ? args.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : args.pattern;
  try {
    new RegExp(source, flags);
  } catch (err) {
    throw new CapCallError('invalid_params', `invalid regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`);
  }
  const globSource = args.glob ? globToRegExpSource(args.glob) : undefined;
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { rootReal: ctx.workspaceReal, startRel, source, flags, globSource, maxMatches: args.maxMatches ?? 500, limits },
    resourceLimits: { maxOldGenerationSizeMb: 512 },
  });
  const found = await new Promise<{ matches: unknown[] }>((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new CapCallError('timeout', `grep took longer than ${limits.timeoutMs} ms (a pathological pattern?) and was stopped`));
    }, limits.timeoutMs);
    worker.once('message', (msg: { result?: unknown; error?: { code: string; message: string } }) => {
      clearTimeout(timer);
      void worker.terminate();
      if (msg.error) reject(new CapCallError(msg.error.code, msg.error.message));
      else resolve(msg.result as { matches: unknown[] });
    });
    worker.once('error', () => {
      clearTimeout(timer);
      reject(new CapCallError('internal', 'grep failed daemon-side'));
    });
  });
  if (!ctx.results) return found;
  // Over the threshold, the matches become a JSONL ResultRef: one match per line.
  return maybeMaterializeValue(ctx.results, found, () => ({ text: found.matches.map((m) => JSON.stringify(m)).join('\n') + '\n', nameHint: 'matches.jsonl' }));
}

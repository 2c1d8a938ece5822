import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { describe, expect, it } from 'vitest';

import { repoRoot } from '../helpers/cli.js';

/** Runs `body` in a fresh node (a real process with real pipes), with takeStdoutForProtocol imported as `take`. */
function run(body: string): { stdout: string; stderr: string; status: number | null } {
  const mod = pathToFileURL(join(repoRoot, 'dist/cli/protocol-stdout.js')).href;
  const res = spawnSync(process.execPath, ['--input-type=module', '-e', `import { takeStdoutForProtocol as take } from ${JSON.stringify(mod)};\n${body}`], { encoding: 'utf8', timeout: 30_000, maxBuffer: 64 * 1024 * 1024 });
  return { stdout: res.stdout, stderr: res.stderr, status: res.status };
}

describe('takeStdoutForProtocol (what keeps comis mcp serve stdout the protocol alone)', () => {
  it('only the protocol stream reaches stdout; process.stdout.write and console.log land on stderr', () => {
    const res = run(`
process.stdout.write('before\\n');
const proto = take();
proto.write('{"jsonrpc":"2.0"}\\n');
process.stdout.write('stray write\\n');
process.stdout.write(Buffer.from('stray buffer\\n'), () => proto.end('{"jsonrpc":"2.0","id":2}\\n'));
console.log('stray console');
`);
    expect(res.status).toBe(0);
    // "before" shows the control: without the guard a write reaches stdout.
    expect(res.stdout).toBe('before\n{"jsonrpc":"2.0"}\n{"jsonrpc":"2.0","id":2}\n');
    expect(res.stderr).toBe('stray write\nstray buffer\nstray console\n');
  });

  it('carries a large protocol message whole, with backpressure', () => {
    const res = run(`
const proto = take();
const big = JSON.stringify({ jsonrpc: '2.0', pad: 'x'.repeat(5 * 1024 * 1024) }) + '\\n';
proto.write(big);
proto.end();
`);
    expect(res.status).toBe(0);
    expect(res.stdout.length).toBe('{"jsonrpc":"2.0","pad":""}\n'.length + 5 * 1024 * 1024);
    expect(JSON.parse(res.stdout).pad).toHaveLength(5 * 1024 * 1024);
  });
});

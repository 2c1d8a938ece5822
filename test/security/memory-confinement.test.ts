/**
 * Attacks on memory_search / memory_get: the jail plants symlinks under its
 * own memory/ pointing at host files (which comis, possibly root, could
 * read), and swaps a note for such a link over and over while it asks comis
 * to index and search. The outside must stay unreachable: no indexed word,
 * no snippet, no memory_get content from past a link, and a link answered
 * exactly like a missing name.
 *
 * Positive controls: the links really lead to the host secret (read back
 * through them host-side, during the race too: a reader that follows links
 * gets the secret in the same attack), the script reached its attack line,
 * and the same search finds the jail's own note (the index works).
 */
import { mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { runComisAsync } from '../helpers/fake-search.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

const CANARY = 'zqxcanaryleak';

function outsideSecret(): { dir: string; file: string } {
  const dir = tempDir('comis-outside-');
  const file = join(dir, 'secret.md');
  writeFileSync(file, `# Host secret\n\nraceword ${CANARY} outsideword\n`);
  mkdirSync(join(dir, 'sub'));
  writeFileSync(join(dir, 'sub', 'inner.md'), `inner ${CANARY} outsideword\n`);
  return { dir, file };
}

describe('memory tools under attack', () => {
  it('links out of memory/ (to a file, to a directory) are neither indexed, nor followed, nor told apart from missing names', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const secret = outsideSecret();
    const script = h.script(
      'plant.mjs',
      `import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { comis_tools } from './comis_tools.js';
mkdirSync('memory', { recursive: true });
writeFileSync('memory/own.md', '# Own\\n\\nownword outsideword\\n');
symlinkSync(${JSON.stringify(secret.file)}, 'memory/leak.md');
symlinkSync(${JSON.stringify(secret.dir)}, 'memory/dir');
console.log('REACHED');
const err = async (p) => { try { await comis_tools.memory_get({ path: p }); return 'NO ERROR'; } catch (e) { return e.code + ': ' + e.message.replace(p, '<path>'); } };
const found = await comis_tools.memory_search({ query: 'outsideword ${CANARY}', limit: 50 });
console.log(JSON.stringify({
  found,
  leak: await err('memory/leak.md'),
  inner: await err('memory/dir/sub/inner.md'),
  missing: await err('memory/nothing-here.md'),
  missingDir: await err('memory/nodir/sub/inner.md'),
}));
`,
    );
    const res = await runComisAsync(['orchestrate', script, '--json'], { home: h.home });
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout + res.stderr).toBe('ok');
    const [reached, json] = body.result.stdout.trim().split('\n');
    expect(reached).toBe('REACHED');
    const out = JSON.parse(json);
    // Control: the links are live and lead to the host secret.
    expect(readlinkSync(join(ws, 'memory', 'leak.md'))).toBe(secret.file);
    expect(readFileSync(join(ws, 'memory', 'leak.md'), 'utf8')).toContain(CANARY);
    expect(readFileSync(join(ws, 'memory', 'dir', 'sub', 'inner.md'), 'utf8')).toContain(CANARY);
    // Control: the search itself works and finds the jail's own note.
    expect(out.found.matches.map((m: { path: string }) => m.path)).toEqual(['memory/own.md']);
    expect(body.result.stdout).not.toContain(CANARY);
    // A link reads exactly like a missing name (file and directory alike).
    expect(out.leak).toBe(out.missing);
    expect(out.leak).toBe('not_found: no such file or directory: <path>');
    expect(out.inner.replace('memory/dir', 'memory/X')).toBe(out.missingDir.replace('memory/nodir', 'memory/X'));
  });

  it('a note swapped for a link to a host secret, over and over while comis indexes and searches, never leaks the secret', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const secret = outsideSecret();
    // The swapper: a second jailed process renames a regular note and a link over memory/zz-race.md in
    // turn, a few ms each. It also rewrites ten notes that sort before it, so every call reindexes them
    // first and the gap between the walk (which saw a note) and the open of zz-race.md is wide.
    const swapper = `const fs = require('node:fs');
const nap = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const end = Date.now() + 6000;
let i = 0;
while (Date.now() < end && !fs.existsSync('memory/stop')) {
  i++;
  for (let k = 0; k < 10; k++) {
    fs.writeFileSync('memory/.a.tmp', '# Filler ' + k + '\\n\\n' + 'filler text '.repeat(2000) + i + '\\n');
    fs.renameSync('memory/.a.tmp', 'memory/a' + k + '.md');
  }
  fs.writeFileSync('memory/.note.tmp', '# Race\\n\\nraceword harmless ' + i + '\\n');
  fs.renameSync('memory/.note.tmp', 'memory/zz-race.md');
  nap(3);
  try { fs.unlinkSync('memory/.link.tmp'); } catch {}
  fs.symlinkSync(${JSON.stringify(secret.file)}, 'memory/.link.tmp');
  fs.renameSync('memory/.link.tmp', 'memory/zz-race.md');
  nap(3);
}`;
    const script = h.script(
      'race.mjs',
      `import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { comis_tools } from './comis_tools.js';
mkdirSync('memory', { recursive: true });
writeFileSync('memory/zz-race.md', '# Race\\n\\nraceword harmless\\n');
const child = spawn(process.execPath, ['-e', ${JSON.stringify(swapper)}], { stdio: 'inherit' });
console.log('REACHED');
let searches = 0, gets = 0, harmless = 0, leaks = 0, reindexed = 0;
const end = Date.now() + 4000;
while (Date.now() < end) {
  const r = await comis_tools.memory_search({ query: 'raceword ${CANARY} outsideword' });
  searches++;
  reindexed += r.indexed;
  for (const m of r.matches) { if (m.snippet.includes('harmless')) harmless++; if (JSON.stringify(m).includes('${CANARY}')) leaks++; }
  try { const g = await comis_tools.memory_get({ path: 'memory/zz-race.md' }); gets++; if (JSON.stringify(g).includes('${CANARY}')) leaks++; } catch (e) { if (e.code !== 'not_found' && e.code !== 'io_error') throw e; }
}
writeFileSync('memory/stop', '');
await new Promise((r) => child.on('exit', r));
console.log(JSON.stringify({ searches, gets, harmless, leaks, reindexed }));
`,
    );
    const run = runComisAsync(['orchestrate', script, '--json', '--timeout-ms', '60000'], { home: h.home });
    // Positive control, while the attack runs: a host-side reader that follows links gets the secret.
    let followerSawSecret = 0;
    let reads = 0;
    let done = false;
    void run.finally(() => (done = true));
    while (!done) {
      try {
        if (readFileSync(join(ws, 'memory', 'zz-race.md'), 'utf8').includes(CANARY)) followerSawSecret++;
        reads++;
      } catch {
        /* between the renames, or before the script made memory/ */
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    const res = await run;
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout + res.stderr).toBe('ok');
    const [reached, json] = body.result.stdout.trim().split('\n');
    expect(reached).toBe('REACHED');
    const out = JSON.parse(json);
    expect(reads, 'host-side reads').toBeGreaterThan(0);
    expect(followerSawSecret, 'control: a link-following reader gets the secret during the race').toBeGreaterThan(0);
    expect(out.searches, JSON.stringify(out)).toBeGreaterThan(5);
    // The index did see the swaps (the note changes inode every time), and the tools did reach the
    // harmless note (a search snippet or a memory_get of it: under load the swap often lands between
    // a search's index and its snippet read, which then drops the match as changed).
    expect(out.reindexed, JSON.stringify(out)).toBeGreaterThan(1);
    expect(out.harmless + out.gets, JSON.stringify(out)).toBeGreaterThan(0);
    expect(out.leaks).toBe(0);
    expect(body.result.stdout).not.toContain(CANARY);
  });
});

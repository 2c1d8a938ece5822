import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson, repoRoot, runComis } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

describe('comis CLI', () => {
  it('--version answers', () => {
    const res = runComis(['--version'], { home: tempDir() });
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^comis\/\d+\.\d+\.\d+ \S+ node-v\d+/);
  });

  it('--help lists the working commands and their topics', () => {
    const res = runComis(['--help'], { home: tempDir() });
    expect(res.status).toBe(0);
    expect(res.stdout).toContain('jail');
    expect(res.stdout).toContain('sdk');
    const sub = runComis(['sdk', 'emit', '--help'], { home: tempDir() });
    expect(sub.status).toBe(0);
    expect(sub.stdout).toContain('--check');
    expect(sub.stdout).toContain('byte-identical');
  });

  it('an unknown flag is a usage error: exit 2, code USAGE, in --json too', () => {
    const res = runComis(['sdk', 'emit', '--bogus'], { home: tempDir() });
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/Error \[USAGE\]: Nonexistent flag: --bogus/);
    expect(res.stderr).toContain('Hint: Run `comis sdk emit --help`');
    const json = runComis(['sdk', 'emit', '--lang', 'rust', '--json'], { home: tempDir() });
    expect(json.status).toBe(2);
    expect(parseJson(json.stdout)).toMatchObject({ status: 'error', error: { code: 'USAGE' } });
  });

  it('an unknown command is a USAGE error with "Did you mean", exit 2, in --json too', () => {
    const home = tempDir();
    const typo = runComis(['skil', 'scan', 'skills/'], { home });
    expect(typo.status).toBe(2);
    expect(typo.stderr).toBe('Error [USAGE]: Unknown command: comis skil\nHint: Did you mean `comis skill scan`? Run `comis --help` to see the commands.\n');
    expect(typo.stdout).toBe('');
    const json = runComis(['sdk', 'emitt', '--json'], { home });
    expect(json.status).toBe(2);
    expect(parseJson(json.stdout)).toEqual({
      status: 'error',
      error: { code: 'USAGE', message: 'Unknown command: comis sdk emitt', hint: 'Did you mean `comis sdk emit`? Run `comis --help` to see the commands.' },
    });
    expect(json.stderr).toBe('');
    // A transposition, and a leaf typed without its topic.
    expect(runComis(['explian', '--last'], { home }).stderr).toContain('Did you mean `comis explain`?');
    expect(runComis(['probe'], { home }).stderr).toContain('Did you mean `comis jail probe`?');
    // Nothing close: no guess, just the way to the list.
    const far = runComis(['frobnicate', '--json'], { home });
    expect(far.status).toBe(2);
    expect(parseJson(far.stdout).error).toEqual({ code: 'USAGE', message: 'Unknown command: comis frobnicate', hint: 'Run `comis --help` to see the commands.' });
    // A flag where the command belongs.
    const flag = runComis(['--jsn'], { home });
    expect(flag.status).toBe(2);
    expect(flag.stderr).toMatch(/^Error \[USAGE\]: Unknown flag: --jsn\nHint: A command comes first/);
  });

  it('an unknown flag suggests the nearest flag of that command, negated ones included, in --json too', () => {
    const home = tempDir();
    const res = runComis(['sdk', 'emit', '--chek', 'x'], { home });
    expect(res.status).toBe(2);
    expect(res.stderr).toBe('Error [USAGE]: Nonexistent flag: --chek\nHint: Did you mean `--check`? Run `comis sdk emit --help` to see the arguments and flags.\n');
    const json = runComis(['run', 'plan.yaml', '--no-tiu', '--json'], { home });
    expect(json.status).toBe(2);
    expect(parseJson(json.stdout).error).toMatchObject({ code: 'USAGE', message: 'Nonexistent flag: --no-tiu', hint: expect.stringMatching(/^Did you mean `--no-tui`\?/) });
    // orchestrate's fast path hands an unknown flag to oclif, so it gets the same hint.
    expect(runComis(['orchestrate', 'x.ts', '--sesion', 'k'], { home }).stderr).toContain('Did you mean `--session`?');
    expect(runComis(['sdk', 'emit', '--frobnicate'], { home }).stderr).toBe('Error [USAGE]: Nonexistent flag: --frobnicate\nHint: Run `comis sdk emit --help` to see the arguments and flags.\n');
  });

  it('sdk emit writes byte-identical files twice, and --check detects a modified file', () => {
    const home = tempDir();
    const a = join(tempDir(), 'a');
    const b = join(tempDir(), 'b');
    expect(runComis(['sdk', 'emit', '--out', a], { home }).status).toBe(0);
    expect(runComis(['sdk', 'emit', '--out', b], { home }).status).toBe(0);
    for (const f of ['comis_tools.ts', 'comis_tools.js', 'comis_tools.d.ts', 'comis_tools.py']) {
      expect(readFileSync(join(a, f))).toEqual(readFileSync(join(b, f)));
    }
    const ok = runComis(['sdk', 'emit', '--check', a, '--json'], { home });
    expect(ok.status).toBe(0);
    expect(parseJson(ok.stdout)).toMatchObject({ status: 'ok', result: { mode: 'check', drift: [] } });

    writeFileSync(join(a, 'comis_tools.py'), readFileSync(join(a, 'comis_tools.py'), 'utf8').replace('def read(', 'def raed('));
    const drift = runComis(['sdk', 'emit', '--check', a], { home });
    expect(drift.status).toBe(1);
    expect(drift.stderr).toMatch(/comis_tools\.py: differs from line \d+/);
    const driftJson = runComis(['sdk', 'emit', '--check', a, '--json'], { home });
    expect(driftJson.status).toBe(1);
    expect(parseJson(driftJson.stdout)).toMatchObject({ status: 'fail', result: { drift: [{ file: 'comis_tools.py', status: 'changed' }] } });
  });

  it('sdk emit into an unwritable place is an I/O error, exit 2', () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'x');
    const res = runComis(['sdk', 'emit', '--out', join(file, 'sub')], { home: tempDir() });
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/Error \[IO_ERROR\]: Cannot create directory .*a-file\/sub: ENOTDIR/);
  });

  it('sdk emit refuses pseudo-filesystems and non-directories at once (no mkdir loop), and creates nested dirs', () => {
    const home = tempDir();
    const proc = runComis(['sdk', 'emit', '--out', '/proc/comis-x'], { home, timeoutMs: 20_000 });
    expect(proc.status).toBe(2);
    expect(proc.stderr).toMatch(/Error \[USAGE\]: --out \/proc\/comis-x is inside \/proc, a kernel pseudo-filesystem/);
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'x');
    const notDir = runComis(['sdk', 'emit', '--out', file], { home });
    expect(notDir.status).toBe(2);
    expect(notDir.stderr).toMatch(/exists and is not a directory/);
    const nested = join(tempDir(), 'a', 'b', 'c');
    expect(runComis(['sdk', 'emit', '--out', nested], { home }).status).toBe(0);
    expect(readFileSync(join(nested, 'comis_tools.py'), 'utf8')).toMatch(/comis_tools/);
  });

  it('--help, --version and jail probe load no heavy module and no other command (sdk emit: esbuild only)', () => {
    const forbidden = /better-sqlite3|\/ink\/|\/react\/|undici|linkedom|readability|ipaddr|duckdb|\/esbuild\/|\/pino\/|@modelcontextprotocol/;
    for (const args of [['--help'], ['--version'], ['mcp', 'serve', '--help'], ['jail', 'probe', '--json'], ['sdk', 'emit', '--out', tempDir()]]) {
      const trace = join(tempDir(), 'trace.txt');
      runComis(args, {
        home: tempDir(),
        env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace },
      });
      const loaded = readFileSync(trace, 'utf8').split('\n');
      // sdk emit writes the JS flavour by stripping the TS runtime's types, which takes esbuild; nothing else.
      const allowed = args[0] === 'sdk' ? /\/esbuild\// : /$^/;
      expect(
        loaded.filter((m) => forbidden.test(m) && !allowed.test(m)),
        args.join(' '),
      ).toEqual([]);
      const commands = loaded.filter((m) => m.includes('/dist/commands/'));
      // --help, --version and `jail probe` are answered by bin/comis.js without oclif or a command module;
      // a command's --help comes from the manifest (test/e2e/mcp-serve.test.ts shows the tracer sees the SDK when serve runs).
      if (args[0] === '--help' || args[0] === '--version' || args[0] === 'jail' || args.includes('--help')) expect(commands).toEqual([]);
      else expect(commands.map((c) => c.replace(/^.*\/dist\/commands\//, ''))).toEqual([`${args[0]}/${args[1]}.js`]);
    }
  });
});

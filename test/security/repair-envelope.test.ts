/**
 * The one-shot repair stays inside the run's envelope, and what goes to the
 * model is only what the seed lists:
 * - the request body holds no host secret, no host path of comis's own (home,
 *   the script's host path, the repo) and the stderr tail only after redaction
 *   (a bearer the script printed goes out as [REDACTED]);
 * - a repaired script that calls a tool the agent does not get is refused by
 *   the same pre-flight before it spawns, and the original error stands; one
 *   that dodges the static scan is still denied at the socket;
 * - the repaired script runs with the same lease bearer and run id.
 * Each with its positive control. The model is a fake on 127.0.0.1.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson, repoRoot } from '../helpers/cli.js';
import { runComisAsync } from '../helpers/fake-search.js';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { makeHome } from '../helpers/orchestrate.js';

const fenced = (code: string): string => `\`\`\`python\n${code}\`\`\`\n`;
const modelYaml = (fake: FakeModel, extra = ''): string => `agents:\n  default:\n${extra}    model:\n      baseUrl: ${fake.baseUrl}\n      name: tiny\n      class: small\n`;
const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n') : []);

const ORIGINAL = `import os
with open('attempts.txt', 'a') as f:
    f.write('original\\n')
with open('lease-1.txt', 'w') as f:
    f.write(os.environ['COMIS_CAP_LEASE'] + ' ' + os.environ['COMIS_RUN_ID'])
import sys
sys.stderr.write('lease=' + os.environ['COMIS_CAP_LEASE'] + ' host=' + str(os.environ.get('HOST_SECRET_TOKEN')) + ' cwd=' + os.getcwd() + '\\n')
import comis_tool
`;

describe('the one-shot repair request and its re-run', { timeout: 240_000 }, () => {
  it('the request carries no host secret, no comis host path, and the stderr tail only redacted', async () => {
    const fake = await startFakeModel({ answer: () => fenced("import os\nwith open('lease-2.txt', 'w') as f:\n    f.write(os.environ['COMIS_CAP_LEASE'] + ' ' + os.environ['COMIS_RUN_ID'])\nprint('ok')\n") });
    const h = makeHome(modelYaml(fake));
    const ws = h.workspace();
    const script = h.script('leaky.py', ORIGINAL);
    const hostSecret = 'host-secret-token-5be1a2c9d0';
    const res = await runComisAsync(['orchestrate', script, '--json'], { home: h.home, env: { HOST_SECRET_TOKEN: hostSecret } });
    const result = parseJson(res.stdout).result;
    expect(result).toMatchObject({ outcome: 'success', stdout: 'ok\n', repair: { outcome: 'repaired' } });
    expect(fake.requests).toHaveLength(1);
    const body = fake.requests[0]!.body;
    const [bearer, runId] = readFileSync(join(ws, 'lease-1.txt'), 'utf8').split(' ');
    // Positive controls: the script did print the bearer to stderr, and that tail did reach the request.
    expect(bearer!.length).toBeGreaterThanOrEqual(32);
    expect(body).toContain('lease=[REDACTED]');
    expect(body).toContain('/run/comis/script.py');
    expect(body).toContain('cwd=/workspace');
    expect(body).toContain("No module named 'comis_tool'");
    // What must not be there.
    for (const needle of [bearer!, hostSecret, h.home, dirname(script), repoRoot, ws]) expect(body, needle).not.toContain(needle);
    // The script's own text is there (that is what gets repaired), nothing else of the host.
    expect(fake.requests[0]!.json!.messages![1]!.content).toContain('import comis_tool\n');
    // Same envelope: the re-run had the same lease bearer and run id.
    expect(readFileSync(join(ws, 'lease-2.txt'), 'utf8')).toBe(`${bearer} ${runId}`);
    expect(result.runId).toBe(runId);
    // Control: another run gets another lease (the equality above is not a constant).
    const other = await runComisAsync(['orchestrate', h.script('plain.py', "import os\nopen('lease-3.txt','w').write(os.environ['COMIS_CAP_LEASE'])\n"), '--json'], { home: h.home });
    expect(other.status).toBe(0);
    expect(readFileSync(join(ws, 'lease-3.txt'), 'utf8')).not.toBe(bearer);
  });

  it('an answer calling a withheld tool (write, surface off) is refused before it spawns: the original error stands', async () => {
    const repaired = "with open('attempts.txt', 'a') as f:\n    f.write('repaired\\n')\nimport comis_tools\ncomis_tools.write({'path': 'x.txt', 'content': 'pwned'})\nprint('wrote')\n";
    const fake = await startFakeModel({ answer: () => fenced(repaired) });
    const h = makeHome(modelYaml(fake));
    const ws = h.workspace();
    const script = h.script('bad.py', "with open('attempts.txt', 'a') as f:\n    f.write('original\\n')\nimport comis_tool\n");
    const res = await runComisAsync(['orchestrate', script, '--session', 'withheld', '--json'], { home: h.home });
    expect(res.status).toBe(1);
    const r = parseJson(res.stdout).result;
    expect(r).toMatchObject({ outcome: 'failure', failureClass: 'nonzero_exit', repair: { attempted: true, class: 'bad_import', outcome: 'refused' } });
    expect(r.stderrTail).toContain("No module named 'comis_tool'");
    expect(fake.requests).toHaveLength(1);
    expect(lines(join(ws, 'attempts.txt'))).toEqual(['original']);
    expect(r.toolCalls).toEqual([]);
    const explained = parseJson((await runComisAsync(['explain', 'withheld', '--json'], { home: h.home })).stdout).result;
    expect(explained.likelyRootCause.nextSteps.join(' ')).toMatch(/needed a capability or tool agent "default" lacks and was refused before it ran/);

    // Positive control: the same answer for an agent that does get write runs (the refusal above is the pre-flight's).
    const fake2 = await startFakeModel({ answer: () => fenced(repaired) });
    const h2 = makeHome(modelYaml(fake2, '    autonomy:\n      write: true\n'));
    const ws2 = h2.workspace();
    const ok = parseJson((await runComisAsync(['orchestrate', h2.script('bad.py', "with open('attempts.txt', 'a') as f:\n    f.write('original\\n')\nimport comis_tool\n"), '--json'], { home: h2.home })).stdout).result;
    expect(ok).toMatchObject({ outcome: 'success', stdout: 'wrote\n', repair: { outcome: 'repaired' } });
    expect(lines(join(ws2, 'attempts.txt'))).toEqual(['original', 'repaired']);
  });

  it('a repaired script that dodges the static scan is still denied at the socket with the same lease: the original error stands', async () => {
    const repaired = "with open('attempts.txt', 'a') as f:\n    f.write('repaired\\n')\nimport comis_tools\ngetattr(comis_tools, 'wr' + 'ite')({'path': 'x.txt', 'content': 'pwned'})\nprint('wrote')\n";
    const fake = await startFakeModel({ answer: () => fenced(repaired) });
    const h = makeHome(modelYaml(fake));
    const ws = h.workspace();
    const script = h.script('bad.py', "with open('attempts.txt', 'a') as f:\n    f.write('original\\n')\nimport comis_tool\n");
    const r = parseJson((await runComisAsync(['orchestrate', script, '--json'], { home: h.home })).stdout).result;
    // It reached the call (the re-run spawned), and the socket denied it: no new privilege.
    expect(lines(join(ws, 'attempts.txt'))).toEqual(['original', 'repaired']);
    expect(r).toMatchObject({ outcome: 'failure', repair: { attempted: true, outcome: 'rerun_failed' } });
    expect(r.stderrTail).toContain("No module named 'comis_tool'");
    expect(r.toolCalls).toEqual([{ tool: 'write', capability: 'orch:write', decision: 'deny', count: 1 }]);
    expect(existsSync(join(ws, 'x.txt'))).toBe(false);
  });
});

describe('the repaired script text is the only thing the model controls', { timeout: 240_000 }, () => {
  it('an answer that tries to leave the jail gets the same jail: no network, no host file', async () => {
    const escape =
      "import socket, os\nwith open('attempts.txt', 'a') as f:\n    f.write('repaired\\n')\nres = []\ntry:\n    socket.create_connection(('127.0.0.1', PORT), timeout=2)\n    res.append('net-open')\nexcept Exception as e:\n    res.append('net-' + type(e).__name__)\nres.append('home-' + str(os.path.exists(HOME)))\nprint(' '.join(res))\n";
    const fake = await startFakeModel();
    const h = makeHome(modelYaml(fake));
    const ws = h.workspace();
    writeFileSync(join(h.home, 'marker.txt'), 'x');
    const port = new URL(fake.baseUrl).port;
    fake.queue({ kind: 'answer', content: fenced(escape.replace('PORT', port).replace('HOME', JSON.stringify(join(h.home, 'marker.txt')))) });
    const r = parseJson((await runComisAsync(['orchestrate', h.script('bad.py', 'import comis_tool\n'), '--json'], { home: h.home })).stdout).result;
    expect(lines(join(ws, 'attempts.txt'))).toEqual(['repaired']);
    expect(r).toMatchObject({ outcome: 'success', repair: { outcome: 'repaired' } });
    // Positive control: the fake model is listening on that port (comis reached it), and the marker exists on the host.
    expect(fake.requests).toHaveLength(1);
    expect(existsSync(join(h.home, 'marker.txt'))).toBe(true);
    expect(r.stdout).toMatch(/^net-(?!open)\w+ home-False\n$/);
  });
});

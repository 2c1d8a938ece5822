/**
 * jq in the SDK runs inside the jail on a ResultRef; its environment
 * builtins ($ENV, env) would hand the script nothing new there, but the
 * SDK promises to refuse them in every flavour. This proves it for the
 * PYTHON SDK from a real jailed Python script (the JS flavour has its own
 * list and would not catch a Python regression).
 *
 * Positive control: the same ref answers an ordinary jq filter.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { makeHome } from '../helpers/orchestrate.js';
import { SUCCESS_LINE } from '../helpers/cli.js';

describe('jq refusals in the Python SDK', () => {
  it('a jailed Python script calling .jq("$ENV") is refused; an ordinary filter works', () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'data.jsonl'), Array.from({ length: 1000 }, (_, i) => JSON.stringify({ id: i, note: 'x'.repeat(20) })).join('\n') + '\n');
    const code = `import comis_tools
r = comis_tools.read({"path": "data.jsonl"})
print(type(r).__name__)
print("control", r.jq("select(.id == 7) | .id"))
for expr in ["$ENV", "$ENV.PATH", "env", "env.HOME", "[$ENV]"]:
    try:
        print(expr, "ALLOWED", r.jq(expr))
    except comis_tools.ComisToolError as e:
        print(expr, e.code)
`;
    const res = h.run(['orchestrate', h.script('jq.py', code)]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stdout).toBe(['ResultRef', 'control 7', '$ENV jq_refused', '$ENV.PATH jq_refused', 'env jq_refused', 'env.HOME jq_refused', '[$ENV] jq_refused', ''].join('\n'));
  });
});

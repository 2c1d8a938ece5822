/** Pre-flight of comis_tools.mcp.<server>.<tool>( calls: orch:mcp, and the allowlist checked before a jail is built. */
import { describe, expect, it } from 'vitest';

import { resolveInterpreter } from '../../src/lib/jail/interpreters.js';
import { footprintOf, mcpPreflightRefusal, scanJavaScript, scanPython } from '../../src/lib/orchestrate/preflight.js';

describe('pre-flight: comis_tools.mcp', () => {
  it('a JS call counts as orch:mcp and names its server.tool', async () => {
    const f = footprintOf(await scanJavaScript(`import { comis_tools } from './comis_tools.js';\nawait comis_tools.mcp.everything.echo({message: 'hi'});\nawait comis_tools.mcp['docs']['search']({});\nconst s = comis_tools.mcp.x;`));
    expect(f.tools).toEqual(['mcp']);
    expect(f.capabilities).toEqual(['orch:mcp']);
    expect(f.mcp).toEqual(['docs.search', 'everything.echo']);
  });

  it('a Python call counts the same way', () => {
    const py = resolveInterpreter('python3').hostPath;
    const f = footprintOf(scanPython(`import comis_tools\nr = comis_tools.mcp.everything.echo({"message": "hi"})\n`, py));
    expect(f.capabilities).toEqual(['orch:mcp']);
    expect(f.mcp).toEqual(['everything.echo']);
  });

  it('an unlisted call is refused with the allow entry to add; listed calls pass', async () => {
    const f = footprintOf(await scanJavaScript(`comis_tools.mcp.everything.echo({}); comis_tools.mcp.docs.search({});`));
    expect(mcpPreflightRefusal(f, ['everything', 'docs.search'], 'a')).toBeUndefined();
    expect(mcpPreflightRefusal(f, ['docs.search', 'everything.other'], 'a')).toMatchObject({
      message: 'The script calls comis_tools.mcp.everything.echo, which agent "a" may not call: it is not on agents.a.autonomy.mcp.allow.',
      hint: expect.stringContaining('Add "everything.echo" (or "everything" for all its tools) to agents.a.autonomy.mcp.allow'),
    });
    expect(mcpPreflightRefusal(f, undefined, 'a')?.message).toContain('comis_tools.mcp.docs.search');
  });

  it('invalid names are refused without echoing them', async () => {
    const f = footprintOf(await scanJavaScript(`comis_tools.mcp['../etc']['passwd']({});`));
    const r = mcpPreflightRefusal(f, ['everything'], 'a');
    expect(r?.message).toContain('not valid');
    expect(r?.message).not.toContain('../etc');
  });
});

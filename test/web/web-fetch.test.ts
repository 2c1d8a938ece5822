/**
 * web_fetch daemon-side, against a real HTTP server on 127.0.0.1 reached
 * through allowPrivate, and refused without it. Every dial goes through a
 * recording dialler that never connects anywhere but 127.0.0.1; names come
 * from a stub resolver.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { webFetchSchema, type WebFetchConfig } from '../../src/lib/config/web-schema.js';
import { createResultStore } from '../../src/lib/resultref/materialize.js';
import { webFetchTool, type WebFetchDeps } from '../../src/lib/tools/web-fetch.js';
import { ENVELOPE_CLOSE, ENVELOPE_OPEN } from '../../src/lib/untrusted/envelope.js';
import { toolContext } from '../helpers/tool-context.js';
import { HIDDEN_TRAPS, recordingDialer, startWebServer, type WebServer } from '../helpers/web-server.js';

let server: WebServer;
beforeAll(async () => {
  server = await startWebServer();
});
afterAll(() => server.close());

function ctx() {
  const c = toolContext(64 * 1024 * 1024);
  const dir = join(c.writesDir, '..');
  mkdirSync(dir, { recursive: true });
  c.results = createResultStore(dir, { budget: c.budget });
  return c;
}

const config = (over: Partial<WebFetchConfig> = {}): WebFetchConfig => webFetchSchema.parse({ allowPrivate: [`127.0.0.1:${server.port}`], ...over });

/** Runs web_fetch with a recording dialler and a stub resolver; returns the result or the error. */
async function fetchWith(url: string, cfg: WebFetchConfig, deps: Partial<WebFetchDeps> = {}, maxChars?: number) {
  const rec = await recordingDialer();
  const resolved: string[] = [];
  const resolve =
    deps.resolve ??
    (async (h: string) => {
      resolved.push(h);
      throw new Error(`no DNS in tests (${h})`);
    });
  const c = ctx();
  try {
    const value = (await webFetchTool(c, cfg, { url, maxChars }, { dial: rec.dial, resolve, ...deps })) as Record<string, any>;
    return { value, rec, resolved, ctx: c };
  } catch (err) {
    return { error: err as { code: string; message: string }, rec, resolved, ctx: c };
  }
}

describe('web_fetch against a local server', () => {
  it('extracts readable text with every hidden trap stripped, in the untrusted envelope', async () => {
    const r = await fetchWith(server.url('/page.html'), config());
    expect(r.error).toBeUndefined();
    const v = r.value!;
    expect(v).toMatchObject({ url: server.url('/page.html'), finalUrl: server.url('/page.html'), status: 200, kind: 'text', title: 'The Visible Title', truncated: false, untrusted: true });
    expect(v.contentType).toMatch(/^text\/html/);
    expect(v.content).toContain('VISIBLE-ONE');
    expect(v.content).toContain('VISIBLE-TWO');
    for (const trap of HIDDEN_TRAPS) expect(v.content, trap).not.toContain(trap);
    expect(v.content.startsWith(`${ENVELOPE_OPEN} id=`)).toBe(true);
    expect(v.content.trimEnd().endsWith('>>>')).toBe(true);
    expect(v.content).toContain(`source=web_fetch origin="${server.url('/page.html')}"`);
    expect(r.rec.offLoopback).toEqual([]);
  });

  it('without allowPrivate the same URL is refused at connect time, and nothing is dialled', async () => {
    const before = server.requests.length;
    const r = await fetchWith(server.url('/page.html'), config({ allowPrivate: [] }));
    expect(r.error).toMatchObject({ code: 'ssrf_blocked' });
    expect(r.error!.message).toContain('loopback');
    expect(r.rec.asked).toEqual([]);
    expect(server.requests.length).toBe(before);
    // allowPrivate for another port does not open this one
    const other = await fetchWith(server.url('/page.html'), config({ allowPrivate: [`127.0.0.1:${server.port === 1 ? 2 : 1}`] }));
    expect(other.error).toMatchObject({ code: 'ssrf_blocked' });
  });

  it('big JSONL becomes a jsonl ResultRef with url/finalUrl/status/contentType/title on the handle', async () => {
    const r = await fetchWith(server.url('/data.jsonl'), config());
    const v = r.value!;
    expect(v).toMatchObject({
      type: 'ResultRef',
      kind: 'jsonl',
      rows: 4000,
      url: server.url('/data.jsonl'),
      finalUrl: server.url('/data.jsonl'),
      status: 200,
      contentType: 'application/x-ndjson',
      title: '',
      truncated: false,
      untrusted: true,
    });
    expect(v.schema).toEqual(['id', 'price', 'name']);
    const file = readFileSync(join(r.ctx.results!.dir, '..', v.ref), 'utf8');
    expect(file.split('\n')[3]).toBe('{"id":3,"price":111,"name":"item-3"}');
  });

  it('JSON inline is the sanitized value; CSV and text keep their kind', async () => {
    const json = await fetchWith(server.url('/report.json'), config());
    expect(json.value).toMatchObject({ kind: 'json', content: { summary: { total: 42, note: 'hi there' } }, untrusted: true });
    const csv = await fetchWith(server.url('/rows.csv'), config());
    expect(csv.value).toMatchObject({ kind: 'csv', content: 'id,name\n1,a\n2,b\n' });
    const txt = await fetchWith(server.url('/plain.txt'), config());
    expect(txt.value!.kind).toBe('text');
    expect(txt.value!.content).toContain('just text');
    expect(txt.value!.content).toContain(ENVELOPE_CLOSE);
    const missing = await fetchWith(server.url('/nope'), config());
    expect(missing.value).toMatchObject({ status: 404 });
  });

  it('a binary content type is a tool error, not bytes', async () => {
    const r = await fetchWith(server.url('/image.png'), config());
    expect(r.error).toMatchObject({ code: 'unsupported_content_type' });
  });

  it.each(['/bomb.gz', '/bomb.br'])('a compression bomb (%s, 64 MiB decoded) is cut at maxResponseBytes of DECODED data', async (path) => {
    const r = await fetchWith(server.url(path), config({ maxResponseBytes: 40_000 }));
    const v = r.value!;
    expect(v).toMatchObject({ type: 'ResultRef', kind: 'text', truncated: true });
    // 40,000 decoded bytes (maxChars cuts the text further), plus the envelope lines.
    expect(v.bytes).toBeLessThan(40_000 + 300);
  });

  it('maxChars from the script cuts the text and says so; the profile floor and ceiling clamp config', async () => {
    const r = await fetchWith(server.url('/big.html'), config(), {}, 500);
    expect(r.value).toMatchObject({ kind: 'text', truncated: true });
    expect(r.value!.content.length).toBeLessThan(500 + 300);
    const { effectiveFetchLimits } = await import('../../src/lib/tools/web-fetch.js');
    expect(effectiveFetchLimits(config({ maxResponseBytes: 1, maxChars: 1, timeoutMs: 1 }))).toEqual({ maxResponseBytes: 32_000, maxChars: 100, timeoutMs: 1_000 });
    expect(effectiveFetchLimits(config({ maxResponseBytes: 9e9, maxChars: 9e9, timeoutMs: 9e9 }))).toEqual({ maxResponseBytes: 5_000_000, maxChars: 500_000, timeoutMs: 120_000 });
    expect(effectiveFetchLimits(config())).toEqual({ maxResponseBytes: 2_000_000, maxChars: 50_000, timeoutMs: 30_000 });
  });

  it('a slow-drip body is cut by the total timeout (web.fetch.timeoutMs)', async () => {
    const r = await fetchWith(server.url('/drip'), config({ timeoutMs: 1_000 }));
    expect(r.error).toMatchObject({ code: 'timeout' });
    expect(r.error!.message).toContain('1000 ms');
  });

  it('huge response headers are refused', async () => {
    const r = await fetchWith(server.url('/huge-headers'), config());
    expect(r.error).toMatchObject({ code: 'headers_too_large' });
  });
});

describe('redirects', () => {
  it('follows up to 5 hops and reports finalUrl; the 6th and a loop are refused', async () => {
    const ok = await fetchWith(server.url('/chain?n=5'), config());
    expect(ok.value).toMatchObject({ url: server.url('/chain?n=5'), finalUrl: server.url('/chain?n=0'), status: 200 });
    const six = await fetchWith(server.url('/chain?n=6'), config());
    expect(six.error).toMatchObject({ code: 'too_many_redirects' });
    const loop = await fetchWith(server.url('/loop'), config());
    expect(loop.error).toMatchObject({ code: 'too_many_redirects' });
  });

  it('followRedirects: false refuses every 3xx (positive control: the same URL followed by default)', async () => {
    const r = await fetchWith(server.url('/chain?n=1'), config({ followRedirects: false }));
    expect(r.error).toMatchObject({ code: 'redirect_refused' });
    expect(r.error!.message).toContain('redirects are blocked for security');
    const control = await fetchWith(server.url('/chain?n=1'), config());
    expect(control.value).toMatchObject({ status: 200 });
  });

  it.each([
    ['file:///etc/passwd', 'scheme_refused'],
    ['gopher://127.0.0.1:70/x', 'scheme_refused'],
  ])('a hop to %s is refused (%s)', async (location, code) => {
    const r = await fetchWith(server.url(`/to?location=${encodeURIComponent(location)}`), config());
    expect(r.error).toMatchObject({ code });
  });

  it.each(['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://[::1]/', 'http://0x7f.1/', 'http://2130706433:1/'])(
    'a hop to the guarded address %s is refused at connect time; with the guard off the dialler WOULD have been asked (positive control)',
    async (location) => {
      const url = server.url(`/to?location=${encodeURIComponent(location)}`);
      const r = await fetchWith(url, config());
      expect(r.error).toMatchObject({ code: 'ssrf_blocked' });
      // The first hop went to the server (allowed); the guarded hop was never dialled.
      expect(r.rec.asked).toEqual([`127.0.0.1:${server.port}`]);
      const off = await fetchWith(url, config(), { unsafeSkipAddressCheck: true });
      expect(off.rec.asked.length).toBe(2);
      expect(off.error).toBeDefined();
    },
  );

  it('a hop to a denied host is refused by the host policy on every hop', async () => {
    const resolve = async (): Promise<{ address: string; family: 4 }[]> => [{ address: '127.0.0.1', family: 4 }];
    const url = server.url(`/to?location=${encodeURIComponent(`http://blocked.example:${server.port}/page.html`)}`);
    const r = await fetchWith(url, config({ denyHosts: ['*.example', 'blocked.example'] }), { resolve });
    expect(r.error).toMatchObject({ code: 'host_denied' });
    expect(r.error!.message).toContain('denyHosts');
    const control = await fetchWith(url, config(), { resolve });
    expect(control.value).toMatchObject({ finalUrl: `http://blocked.example:${server.port}/page.html`, status: 200 });
  });
});

describe('DNS: resolve once, check every address, dial the checked one', () => {
  it('a rebinding resolver (allowed first, private after) is asked once and the checked address is what is dialled', async () => {
    let calls = 0;
    const resolve = async (): Promise<{ address: string; family: 4 }[]> => (calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.0.0.1', family: 4 }]);
    const r = await fetchWith(`http://rebind.test:${server.port}/page.html`, config(), { resolve });
    expect(r.error).toBeUndefined();
    expect(calls).toBe(1);
    expect(r.rec.asked).toEqual([`127.0.0.1:${server.port}`]);
    expect(r.rec.offLoopback).toEqual([]);
  });

  it('one refused address among the answers refuses the name, whatever its position (positive control: the allowed answer alone works)', async () => {
    for (const answers of [
      ['127.0.0.1', '10.0.0.1'],
      ['10.0.0.1', '127.0.0.1'],
      ['93.184.216.34', '169.254.169.254'],
    ]) {
      const resolve = async () => answers.map((address) => ({ address, family: 4 as const }));
      const r = await fetchWith(`http://multi.test:${server.port}/page.html`, config(), { resolve });
      expect(r.error, answers.join(',')).toMatchObject({ code: 'ssrf_blocked' });
      expect(r.error!.message).not.toContain('10.0.0.1'); // a name's resolved addresses are not echoed
      expect(r.rec.asked).toEqual([]);
    }
    const alone = await fetchWith(`http://multi.test:${server.port}/page.html`, config(), { resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
    expect(alone.value).toMatchObject({ status: 200 });
  });

  it('a name resolving to a private address is refused; with the check off the dialler would have been asked for it', async () => {
    const resolve = async () => [{ address: '169.254.169.254', family: 4 as const }];
    const r = await fetchWith('http://metadata.test/latest/', config(), { resolve });
    expect(r.error).toMatchObject({ code: 'ssrf_blocked' });
    expect(r.rec.asked).toEqual([]);
    const off = await fetchWith('http://metadata.test/latest/', config(), { resolve, unsafeSkipAddressCheck: true });
    expect(off.rec.offLoopback).toEqual(['169.254.169.254:80']);
  });

  it('allowHosts: only listed hosts; denyHosts wins', async () => {
    const resolve = async () => [{ address: '127.0.0.1', family: 4 as const }];
    const u = `http://docs.intra.test:${server.port}/plain.txt`;
    expect((await fetchWith(u, config({ allowHosts: ['*.intra.test'] }), { resolve })).value).toMatchObject({ status: 200 });
    expect((await fetchWith(u, config({ allowHosts: ['other.test'] }), { resolve })).error).toMatchObject({ code: 'host_denied' });
    expect((await fetchWith(u, config({ allowHosts: ['*.intra.test'], denyHosts: ['docs.intra.test'] }), { resolve })).error).toMatchObject({ code: 'host_denied' });
  });
});

/**
 * The HTML extraction pool under pressure: more pages than workers, a run that ends while its
 * pages are extracted or waiting, and a deadline that must count the wait for a worker. A slow
 * page here is one of 2,000 nested elements (tens of seconds of Readability).
 */
import { describe, expect, it } from 'vitest';

import { extractHtmlInWorker, htmlWorkersAlive, MAX_HTML_WORKERS } from '../../src/lib/web/html-pool.js';
import { until } from '../jail/helpers.js';

const SLOW = `<!doctype html><html><body>${'<div>'.repeat(2000)}deep${'</div>'.repeat(2000)}</body></html>`;
const FINE = '<!doctype html><html><head><title>Fine</title></head><body><article><p>The one readable paragraph of this small page, long enough to be kept.</p></article></body></html>';
const codeOf = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? 'error',
  );

describe('the HTML extraction pool', () => {
  it('a run that ends with pages extracting and waiting leaves no worker taken: the next page is extracted at once', async () => {
    // The worker program is ready (the first call builds it): what follows is the pool alone.
    await extractHtmlInWorker(FINE, 'http://x.test/', { timeoutMs: 30_000 });
    const run = new AbortController();
    const start = (): Promise<string> => codeOf(extractHtmlInWorker(SLOW, 'http://x.test/', { timeoutMs: 60_000, signal: run.signal }));
    // Two pages take both workers; two more wait, their abort listeners after the first two's.
    const jobs = Array.from({ length: MAX_HTML_WORKERS }, start);
    await new Promise((r) => setTimeout(r, 150));
    jobs.push(start(), start());
    await new Promise((r) => setTimeout(r, 150));
    run.abort();
    expect(await Promise.all(jobs)).toEqual(jobs.map(() => 'run_ended'));
    // A later run's page gets a worker (before the fix, both slots stayed taken for good).
    const next = await extractHtmlInWorker(FINE, 'http://x.test/', { timeoutMs: 30_000, signal: new AbortController().signal });
    expect(next.title).toBe('Fine');
    expect(htmlWorkersAlive()).toBeLessThanOrEqual(MAX_HTML_WORKERS);
  }, 120_000);

  it("the wait for a worker counts against the call's deadline", async () => {
    const slow = Array.from({ length: MAX_HTML_WORKERS }, () => codeOf(extractHtmlInWorker(SLOW, 'http://x.test/', { timeoutMs: 8_000 })));
    await new Promise((r) => setTimeout(r, 100));
    const order: string[] = [];
    const waiting = codeOf(extractHtmlInWorker(FINE, 'http://x.test/', { timeoutMs: 1_000 })).then((c) => (order.push(`waiter:${c}`), c));
    void Promise.all(slow).then(() => order.push('slow'));
    // The waiter's deadline passes while both workers are still busy: it ends first, as a timeout.
    expect(await waiting).toBe('timeout');
    expect(order).toEqual(['waiter:timeout']);
    expect(await Promise.all(slow)).toEqual(slow.map(() => 'timeout'));
    await until(() => htmlWorkersAlive() <= MAX_HTML_WORKERS, 5_000);
  }, 120_000);
});

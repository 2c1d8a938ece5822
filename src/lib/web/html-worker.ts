/**
 * The HTML extraction worker: a page's hidden-content strip, Readability and
 * block text (extract.ts's extractHtml) in a thread of its own. The work is
 * page-controlled and can be long (a deeply nested page, thousands of hiding
 * rules over thousands of elements), so it never runs on comis's event loop:
 * the pool (html-pool.ts) terminates this thread at the call's deadline.
 *
 * One job at a time: `{html, url}` in, `{title, text}` or `{error}` out.
 */
import { parentPort } from 'node:worker_threads';

import { extractHtml } from './extract.js';

// linkedom and Readability load now: the pool starts a worker when an HTML response's headers
// arrive, so this overlaps the body's download instead of delaying its extraction.
void import('linkedom').catch(() => undefined);
void import('@mozilla/readability').catch(() => undefined);

parentPort!.on('message', (job: { html: string; url: string }) => {
  extractHtml(job.html, job.url).then(
    (page) => parentPort!.postMessage({ title: page.title, text: page.text }),
    // A page nested past the stack's depth throws RangeError from the parser or the strip.
    (err: unknown) => parentPort!.postMessage({ error: err instanceof RangeError ? 'too_deep' : 'failed' }),
  );
});

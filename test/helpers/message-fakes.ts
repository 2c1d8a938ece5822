/**
 * Receivers for message_* tests, each a real HTTP server on 127.0.0.1 that
 * speaks the real wire: a webhook receiver that checks the HMAC signature and
 * dedupes on Idempotency-Key (and can fail at random with 500s or hang past
 * a timeout), a fake Telegram Bot API (sendMessage, setMessageReaction) and a
 * fake Slack Web API (chat.postMessage, reactions.add, an incoming webhook).
 * Plus `comisAsync`: bin/comis.js spawned asynchronously, since these servers
 * live in the test's own event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { comisBin, repoRoot } from './cli.js';

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

const close = (server: Server): Promise<void> =>
  new Promise((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });

export interface WebhookDelivery {
  key: string | undefined;
  signatureOk: boolean;
  body: Record<string, unknown>;
}

export interface WebhookReceiver {
  url: string;
  /** Every request that reached the handler (retries and redeliveries included). */
  requests: WebhookDelivery[];
  /** The effects: one per Idempotency-Key, in first-arrival order (what a deduping receiver acts on). */
  effects: Map<string, Record<string, unknown>>;
  /** Requests answered 2xx whose key had been answered 2xx before (a redelivery the dedupe absorbed). */
  duplicates: number;
  /** Called as each request arrives (the crash harness arms a kill on it). */
  onRequest?: (() => void) | undefined;
  close: () => Promise<void>;
}

export async function startWebhookReceiver(options: { secret?: string; failRate?: number; hangRate?: number; delayMs?: number; status?: number } = {}): Promise<WebhookReceiver> {
  const recv: WebhookReceiver = { url: '', requests: [], effects: new Map(), duplicates: 0, close: async () => undefined };
  const { server, port } = await listen((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const key = req.headers['idempotency-key'] as string | undefined;
      const ts = req.headers['x-comis-timestamp'] as string | undefined;
      const sig = req.headers['x-comis-signature'] as string | undefined;
      let signatureOk = false;
      if (options.secret && ts && sig) {
        const want = Buffer.from(`sha256=${createHmac('sha256', options.secret).update(`${ts}.${raw}`).digest('hex')}`);
        signatureOk = want.length === Buffer.byteLength(sig) && timingSafeEqual(want, Buffer.from(sig));
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        /* recorded as {} */
      }
      recv.requests.push({ key, signatureOk, body });
      recv.onRequest?.();
      if (options.hangRate && Math.random() < options.hangRate) return; // never answers: the sender's timeout
      if (options.failRate && Math.random() < options.failRate) {
        res.writeHead(500).end('boom');
        return;
      }
      if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
      if (options.status) {
        res.writeHead(options.status).end('no');
        return;
      }
      if (options.secret && !signatureOk) {
        res.writeHead(401).end('bad signature');
        return;
      }
      if (key !== undefined) {
        if (recv.effects.has(key)) recv.duplicates++;
        else recv.effects.set(key, body);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ message_id: `wh-${recv.effects.size}` }));
    })();
  });
  recv.url = `http://127.0.0.1:${port}/hook`;
  recv.close = () => close(server);
  return recv;
}

export interface TelegramCall {
  method: string;
  body: Record<string, unknown>;
}

export interface FakeTelegram {
  baseUrl: string;
  port: number;
  calls: TelegramCall[];
  /** Tokens of requests refused as Unauthorized (a wrong token). */
  unauthorized: string[];
  close: () => Promise<void>;
}

/** The Bot API's shapes: POST /bot<token>/<method>, {ok:true,result} or {ok:false,error_code,description}. */
export async function startFakeTelegram(token: string): Promise<FakeTelegram> {
  const calls: TelegramCall[] = [];
  const unauthorized: string[] = [];
  let nextId = 100;
  const { server, port } = await listen((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const json = (status: number, value: unknown): void => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      const m = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? '');
      if (!m || req.method !== 'POST') return json(404, { ok: false, error_code: 404, description: 'Not Found' });
      if (m[1] !== token) unauthorized.push(decodeURIComponent(m[1]!));
      if (m[1] !== token) return json(401, { ok: false, error_code: 401, description: 'Unauthorized' });
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return json(400, { ok: false, error_code: 400, description: 'Bad Request: invalid JSON' });
      }
      calls.push({ method: m[2]!, body });
      if (m[2] === 'sendMessage') {
        if (typeof body.text !== 'string' || body.text === '') return json(400, { ok: false, error_code: 400, description: 'Bad Request: message text is empty' });
        return json(200, { ok: true, result: { message_id: nextId++, date: Math.floor(Date.now() / 1000), chat: { id: body.chat_id, type: 'private' }, text: body.text } });
      }
      if (m[2] === 'setMessageReaction') {
        if (typeof body.message_id !== 'number') return json(400, { ok: false, error_code: 400, description: 'Bad Request: message_id must be an integer' });
        return json(200, { ok: true, result: true });
      }
      return json(404, { ok: false, error_code: 404, description: 'Not Found: method not found' });
    })();
  });
  return { baseUrl: `http://127.0.0.1:${port}`, port, calls, unauthorized, close: () => close(server) };
}

export interface FakeSlack {
  baseUrl: string;
  webhookUrl: string;
  calls: Array<{ path: string; auth: string | undefined; body: Record<string, unknown> }>;
  close: () => Promise<void>;
}

/** Slack's shapes: Web API methods answer HTTP 200 {ok, …}; an incoming webhook answers "ok". */
export async function startFakeSlack(token: string): Promise<FakeSlack> {
  const calls: FakeSlack['calls'] = [];
  let ts = 1712345678;
  const { server, port } = await listen((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const body = JSON.parse(raw || '{}') as Record<string, unknown>;
      calls.push({ path: req.url ?? '', auth: req.headers.authorization, body });
      const json = (value: unknown): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.url === '/services/T000/B000/XXXX') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      if (req.headers.authorization !== `Bearer ${token}`) return json({ ok: false, error: 'invalid_auth' });
      if (req.url === '/api/chat.postMessage') {
        if (typeof body.channel !== 'string') return json({ ok: false, error: 'channel_not_found' });
        const id = `${ts++}.000100`;
        return json({ ok: true, channel: body.channel, ts: id, message: { type: 'message', text: body.text, ts: id } });
      }
      if (req.url === '/api/reactions.add') return json(typeof body.timestamp === 'string' && typeof body.name === 'string' ? { ok: true } : { ok: false, error: 'invalid_arguments' });
      return json({ ok: false, error: 'unknown_method' });
    })();
  });
  return { baseUrl: `http://127.0.0.1:${port}`, webhookUrl: `http://127.0.0.1:${port}/services/T000/B000/XXXX`, calls, close: () => close(server) };
}

export interface AsyncCliResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** bin/comis.js spawned asynchronously (the fakes above live in this process's event loop). */
export function comisAsync(home: string, args: string[], env: Record<string, string> = {}, onSpawn?: (child: ChildProcess) => void): Promise<AsyncCliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [comisBin, ...args], { cwd: repoRoot, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
    onSpawn?.(child);
  });
}

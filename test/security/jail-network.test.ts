/**
 * Attack battery, network: the jail has no network. Each case is a script
 * that tries to get out, run in the real jail, and the promise that holds.
 */
import { createSocket } from 'node:dgram';
import { chmodSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp.js';
import { node, python, runInJail } from '../jail/helpers.js';

let tcp: Server;
let tcpPort = 0;
let tcpConnections = 0;
const udp = createSocket('udp4');
let udpPort = 0;
let udpDatagrams = 0;
let abstract: Server;
let abstractConnections = 0;
const abstractName = `comis-test-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  tcp = createServer((s) => {
    tcpConnections += 1;
    s.destroy();
  });
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  tcpPort = (tcp.address() as { port: number }).port;
  udp.on('message', () => (udpDatagrams += 1));
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
  udpPort = udp.address().port;
  abstract = createServer((s) => {
    abstractConnections += 1;
    s.destroy();
  });
  await new Promise<void>((r) => abstract.listen(`\0${abstractName}`, r));
});

afterAll(() => {
  tcp.close();
  udp.close();
  abstract.close();
});

describe('jail network', () => {
  it('node: TCP to a host listener on 127.0.0.1, UDP to the host, DNS and an outside address all fail', async () => {
    const n = node();
    const script = `
      const net = require('node:net'), dgram = require('node:dgram'), dns = require('node:dns');
      const out = {};
      const tcp = (host, port) => new Promise((res) => { const s = net.connect(port, host); s.on('connect', () => { s.destroy(); res('connected'); }); s.on('error', (e) => res(e.code)); });
      (async () => {
        out.tcpLocal = await tcp('127.0.0.1', ${tcpPort});
        out.tcpOutside = await tcp('1.1.1.1', 443);
        out.dns = await new Promise((res) => dns.lookup('example.com', (e, a) => res(e ? e.code : a)));
        out.udpOutside = await new Promise((res) => { const u = dgram.createSocket('udp4'); u.send('x', 53, '8.8.8.8', (e) => { u.close(); res(e ? e.code : 'sent'); }); });
        await new Promise((res) => { const u = dgram.createSocket('udp4'); u.send('x', ${udpPort}, '127.0.0.1', () => { u.close(); res(); }); });
        out.abstract = await new Promise((res) => { const s = net.connect('\\0${abstractName}'); s.on('connect', () => { s.destroy(); res('connected'); }); s.on('error', (e) => res(e.code)); });
        console.log(JSON.stringify(out));
      })();`;
    const r = await runInJail({ command: n.cmd(script), mounts: n.mounts });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as Record<string, string>;
    expect(out.tcpLocal).toBe('ECONNREFUSED'); // the jail's own loopback: nothing listens there
    expect(out.tcpOutside).toBe('ENETUNREACH');
    expect(out.dns).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
    expect(out.udpOutside).toBe('ENETUNREACH');
    expect(out.abstract).toBe('ECONNREFUSED'); // abstract unix sockets are per network namespace
    expect(tcpConnections).toBe(0);
    expect(udpDatagrams).toBe(0);
    expect(abstractConnections).toBe(0);
  });

  it('python: TCP, UDP and DNS fail the same way; only lo exists', async () => {
    const py = python();
    const script = `
import socket, json, os
out = {}
def attempt(fn):
    try:
        return fn()
    except OSError as e:
        return type(e).__name__ + ':' + str(e.errno)
def tcp():
    s = socket.create_connection(('127.0.0.1', ${tcpPort}), timeout=2); s.close(); return 'connected'
out['tcp'] = attempt(tcp)
out['dns'] = attempt(lambda: socket.getaddrinfo('example.com', 80))
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b'x', ('127.0.0.1', ${udpPort})); u.close(); return 'sent-locally'
out['udp'] = attempt(udp)
out['udpOut'] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53)))
out['ifaces'] = sorted(n for _, n in socket.if_nameindex())
print(json.dumps(out))
`;
    const r = await runInJail({ command: py.cmd(script), mounts: py.mounts });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out.tcp).toBe('ConnectionRefusedError:111');
    expect(String(out.dns)).toMatch(/^gaierror:/);
    expect(out.udpOut).toBe('OSError:101'); // ENETUNREACH
    expect(out.ifaces).toEqual(['lo']);
    expect(tcpConnections).toBe(0);
    expect(udpDatagrams).toBe(0);
  });

  it('a socket bound in (kind socket) is reachable but read-only: it cannot be chmodded, removed or replaced', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o711);
    const path = join(dir, 'cap.sock');
    let connections = 0;
    const server = createServer((s) => {
      connections += 1;
      s.end('pong');
    });
    await new Promise<void>((r) => server.listen(path, r));
    try {
      chmodSync(path, 0o666);
      const modeBefore = statSync(path).mode;
      const py = python();
      const script = `
import socket, os, json
out = {}
s = socket.socket(socket.AF_UNIX); s.connect('/run/cap/cap.sock'); out['reply'] = s.recv(10).decode(); s.close()
for name, fn in [('chmod', lambda: os.chmod('/run/cap/cap.sock', 0o777)), ('unlink', lambda: os.unlink('/run/cap/cap.sock')),
                 ('rename', lambda: os.rename('/run/cap/cap.sock', '/run/cap/x')), ('bind', lambda: socket.socket(socket.AF_UNIX).bind('/run/cap/evil.sock'))]:
    try:
        fn(); out[name] = 'ok'
    except OSError as e:
        out[name] = e.errno
print(json.dumps(out))
`;
      const r = await runInJail({ command: py.cmd(script), mounts: [...py.mounts, { kind: 'socket', source: path, target: '/run/cap/cap.sock' }] });
      expect(r.stderr).toBe('');
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(out.reply).toBe('pong');
      expect(out.chmod).toBe(30); // EROFS
      expect(out.unlink).not.toBe('ok');
      expect(out.rename).not.toBe('ok');
      expect(out.bind).not.toBe('ok');
      expect(connections).toBe(1);
      expect(statSync(path).mode).toBe(modeBefore);
    } finally {
      server.close();
    }
  });
});

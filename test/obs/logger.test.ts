import { existsSync, readFileSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { afterEach, describe, expect, it, vi } from 'vitest';

import { closeLogger, flagNamesOf, configureLogging, getLogger, logCommandEnd, logCommandStart, logFilePath, logRunEvent, logToolFailure, redactLogLine, resolveLogLevel } from '../../src/lib/obs/logger.js';
import { internalError } from '../../src/lib/errors.js';
import { registerSecret, unregisterSecret } from '../../src/lib/redact/output-guard.js';
import type { OrchestrateEvent } from '../../src/lib/orchestrate/runner.js';
import { tempDir } from '../helpers/temp.js';

const require = createRequire(import.meta.url);
const pinoLoaded = (): boolean => Object.keys(require.cache).some((k) => k.includes('/node_modules/pino/'));

const BEARER = 'Zm9vYmFyYmF6cXV4LWJlYXJlci10b2tlbi0xMjM0NTY3ODkw';
const API_KEY = 'sk-"quoted\\key"-0123456789';
const CANARY = 'CANARY-obs-logger-5e1d';
/** Untyped events, as a buggy or future caller might pass them. */
const logEvent = (event: { type: string; [key: string]: unknown }): void => logRunEvent(event);

function freshLog(options: { verbose?: boolean; env?: NodeJS.ProcessEnv; maxBytes?: number } = {}): { home: string; read: () => string; lines: () => Record<string, unknown>[] } {
  closeLogger();
  const home = tempDir('comis-log-');
  configureLogging({ home, verbose: options.verbose ?? false, env: options.env ?? {}, ...(options.maxBytes ? { maxBytes: options.maxBytes } : {}) });
  const read = (): string => (existsSync(logFilePath(home)) ? readFileSync(logFilePath(home), 'utf8') : '');
  return {
    home,
    read,
    lines: () =>
      read()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

afterEach(() => {
  closeLogger();
  unregisterSecret(BEARER);
  unregisterSecret(API_KEY);
});

describe('logger', () => {
  it('is lazy: importing it loads no pino and creates no file; getLogger does both', () => {
    expect(pinoLoaded()).toBe(false);
    const log = freshLog();
    expect(existsSync(join(log.home, 'logs'))).toBe(false);
    getLogger().info('hello');
    expect(pinoLoaded()).toBe(true);
    expect(statSync(join(log.home, 'logs')).mode & 0o777).toBe(0o700);
    expect(statSync(logFilePath(log.home)).mode & 0o777).toBe(0o600);
    expect(log.lines()[0]).toMatchObject({ level: 30, msg: 'hello', pid: process.pid });
  });

  it('the run helpers write, without pino, the very line the pino logger writes (same keys, order and values but the time)', () => {
    registerSecret(BEARER);
    const started = { type: 'run:started', runId: 'r-0123456789ab', leaseId: 'l-0123456789ab', sessionKey: `s-${BEARER}`, agentId: 'default', language: 'ts' };
    const light = freshLog();
    logEvent(started);
    logCommandEnd('orchestrate', { exitCode: 2, error: { code: 'USAGE', message: `bad ${BEARER}` } });
    const lightLines = light.lines();
    // The same events once the pino logger exists (another caller asked for it): lines go through pino.
    const heavy = freshLog();
    getLogger();
    logEvent(started);
    logCommandEnd('orchestrate', { exitCode: 2, error: { code: 'USAGE', message: `bad ${BEARER}` } });
    const pinoLines = heavy.lines();
    expect(pinoLoaded()).toBe(true);
    expect(lightLines).toHaveLength(2);
    const withoutTime = (l: Record<string, unknown>): [string, unknown][] => Object.entries(l).filter(([k]) => k !== 'time');
    expect(lightLines.map(withoutTime)).toEqual(pinoLines.map(withoutTime));
    for (const l of lightLines) expect(l.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(light.read()).not.toContain(BEARER);
    expect(light.read()).toContain('[REDACTED]');
  });

  it('levels: info by default; --verbose means debug; COMIS_LOG_LEVEL raises or lowers; bad values are reported', () => {
    expect(resolveLogLevel({ env: {} })).toEqual({ level: 'info' });
    expect(resolveLogLevel({ env: {}, verbose: true })).toEqual({ level: 'debug' });
    expect(resolveLogLevel({ env: { COMIS_LOG_LEVEL: 'trace' }, verbose: true })).toEqual({ level: 'trace' });
    expect(resolveLogLevel({ env: { COMIS_LOG_LEVEL: 'error' } })).toEqual({ level: 'error' });
    expect(resolveLogLevel({ env: { COMIS_LOG_LEVEL: 'error' }, verbose: true })).toEqual({ level: 'debug' });
    expect(resolveLogLevel({ env: { COMIS_LOG_LEVEL: 'loud' } })).toEqual({ level: 'info', problem: expect.stringContaining('COMIS_LOG_LEVEL must be one of') });

    const quiet = freshLog();
    getLogger().debug('not written');
    getLogger().info('written');
    expect(quiet.lines().map((l) => l.msg)).toEqual(['written']);
    const verbose = freshLog({ verbose: true });
    getLogger().debug('now written');
    expect(verbose.lines().map((l) => l.msg)).toEqual(['now written']);
    const env = freshLog({ env: { COMIS_LOG_LEVEL: 'warn' } });
    getLogger().info('dropped');
    getLogger().warn('kept');
    expect(env.lines().map((l) => l.msg)).toEqual(['kept']);
  });

  it('redacts every registered secret wherever it hides: message, fields, nesting, arrays, errors, bindings, keys, escapes', () => {
    registerSecret(BEARER);
    registerSecret(API_KEY);
    const log = freshLog({ verbose: true });
    const logger = getLogger();
    logger.info(`bearer ${BEARER} in the message`);
    logger.info({ lease: BEARER, nested: { deeper: { list: ['x', `k=${API_KEY}`] } } }, 'fields');
    logger.error(new Error(`upstream said ${API_KEY} was wrong`), 'an error first');
    logger.error({ err: new Error(`nested ${BEARER}`, { cause: new Error(`cause ${API_KEY}`) }) }, 'an error inside');
    logger.child({ runBearer: BEARER }).warn('child bindings');
    logger.info({ [BEARER]: 1 }, 'secret as a key');
    logger.info('printf %s and %j', BEARER, { k: API_KEY });
    const circular: Record<string, unknown> = { secret: BEARER };
    circular.self = circular;
    logger.info(circular, 'circular');
    const text = log.read();
    expect(text).not.toContain(BEARER);
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain(JSON.stringify(API_KEY).slice(1, -1));
    expect(text).not.toContain('quoted');
    const lines = log.lines();
    expect(lines).toHaveLength(8);
    expect(lines[0]!.msg).toBe('bearer [REDACTED] in the message');
    expect(lines[1]).toMatchObject({ lease: '[REDACTED]', nested: { deeper: { list: ['x', 'k=[REDACTED]'] } } });
    expect(lines[2]).toMatchObject({ err: { type: 'Error', message: 'upstream said [REDACTED] was wrong' } });
    expect(String((lines[2]!.err as { stack: string }).stack)).toContain('[REDACTED]');
    expect(lines[3]).toMatchObject({ err: { message: 'nested [REDACTED]', cause: { message: 'cause [REDACTED]' } } });
    expect(lines[4]).toMatchObject({ runBearer: '[REDACTED]', msg: 'child bindings' });
    expect(lines[5]).toHaveProperty(['[REDACTED]'], 1);
    expect(lines[6]!.msg).toBe('printf [REDACTED] and {"k":"[REDACTED]"}');
  });

  it('the destination pass alone catches JSON-escaped secrets', () => {
    registerSecret(API_KEY);
    const line = `${JSON.stringify({ msg: `x ${API_KEY} y` })}\n`;
    expect(line).not.toContain(API_KEY);
    expect(redactLogLine(line)).toBe('{"msg":"x [REDACTED] y"}\n');
    expect(redactLogLine('not json at all\n')).toBe('not json at all\n');
  });

  it('is bounded: rotates to comis.log.1 at open and while writing', () => {
    const home = tempDir('comis-log-');
    mkdirSync(join(home, 'logs'), { recursive: true });
    writeFileSync(logFilePath(home), 'x'.repeat(5000));
    closeLogger();
    configureLogging({ home, env: {}, maxBytes: 4096 });
    getLogger().info('first after rotation');
    expect(readFileSync(`${logFilePath(home)}.1`, 'utf8')).toBe('x'.repeat(5000));
    expect(readFileSync(logFilePath(home), 'utf8')).toContain('first after rotation');
    for (let i = 0; i < 200; i++) getLogger().info({ i, pad: 'p'.repeat(50) }, 'line');
    expect(statSync(logFilePath(home)).size).toBeLessThanOrEqual(4096);
    expect(statSync(`${logFilePath(home)}.1`).size).toBeLessThanOrEqual(4096);
    const last = readFileSync(logFilePath(home), 'utf8').trim().split('\n').at(-1)!;
    expect(JSON.parse(last)).toMatchObject({ i: 199 });
  });

  it('logRunEvent is an allowlist: ids, outcome and counts, never stdout, stderr or arguments', () => {
    registerSecret(BEARER);
    const log = freshLog();
    const stdout = vi.spyOn(process.stdout, 'write');
    logEvent({ type: 'run:preflight', footprint: { tools: ['read'], capabilities: ['orch:read'] } });
    logEvent({ type: 'run:started', runId: 'r-0123456789ab', leaseId: 'l-0123456789ab', sessionKey: 'sess-1', agentId: 'default', language: 'ts' });
    logEvent({ type: 'capability:audited', leaseId: 'l-0123456789ab', runId: 'r-0123456789ab', tool: 'read', capability: 'orch:read', decision: 'allow', at: 1 });
    logEvent({ type: 'capability:audited', leaseId: 'l-0123456789ab', runId: 'r-0123456789ab', tool: 'write', capability: 'orch:write', decision: 'deny', reason: 'surface_disabled', at: 2, args: { content: CANARY } });
    logEvent({
      type: 'run:finished',
      result: {
        runId: 'r-0123456789ab',
        leaseId: 'l-0123456789ab',
        sessionKey: 'sess-1',
        agentId: 'default',
        outcome: 'failure',
        exitCode: 3,
        failureClass: 'nonzero_exit',
        durationMs: 812,
        timeoutMs: 60000,
        stdout: `${CANARY} ${BEARER}\n`,
        stdoutTruncated: false,
        stderrTail: `Error: ${CANARY}`,
        toolCalls: [
          { tool: 'read', capability: 'orch:read', decision: 'allow', count: 2 },
          { tool: 'write', capability: 'orch:write', decision: 'deny', count: 1 },
        ],
        resultRefs: { count: 1, bytes: 20000 },
        script: CANARY,
      },
    });
    expect(stdout).not.toHaveBeenCalled();
    stdout.mockRestore();
    const text = log.read();
    expect(text).not.toContain(CANARY);
    expect(text).not.toContain(BEARER);
    const lines = log.lines();
    expect(lines.map((l) => l.event)).toEqual(['run:started', 'capability:audited', 'run:finished']);
    expect(lines[1]).toMatchObject({ decision: 'deny', capability: 'orch:write', reason: 'surface_disabled' });
    expect(lines[2]).toMatchObject({ outcome: 'failure', exitCode: 3, failureClass: 'nonzero_exit', durationMs: 812, stdoutChars: CANARY.length + BEARER.length + 2, toolCallsAllowed: 2, toolCallsDenied: 1, resultRefCount: 1 });
  });

  it("takes the runner's events as they are", () => {
    const log = freshLog();
    const events: OrchestrateEvent[] = [{ type: 'capability:audited', leaseId: 'l-1', runId: 'r-1', tool: 'write', capability: 'orch:write', decision: 'deny', reason: 'surface_disabled', at: 1 }];
    for (const e of events) logRunEvent(e);
    expect(log.lines()).toHaveLength(1);
  });

  it('command helpers log flag names, never values, and errors redacted', () => {
    registerSecret(BEARER);
    const log = freshLog({ verbose: true });
    expect(flagNamesOf(['job.ts', '--session', 'secret-session', '--timeout-ms=5', '-y', '--', '--not-a-flag'])).toEqual(['session', 'timeout-ms', 'y']);
    logCommandStart('orchestrate', ['session', 'timeout-ms']);
    logCommandEnd('orchestrate', { exitCode: 2, error: { code: 'IO_ERROR', message: `Cannot read ${BEARER}` } });
    logCommandEnd('sdk:emit', { exitCode: 0, durationMs: 12 });
    const lines = log.lines();
    expect(lines[0]).toMatchObject({ event: 'command:start', command: 'orchestrate', flags: ['session', 'timeout-ms'] });
    expect(lines[1]).toMatchObject({ event: 'command:error', level: 50, code: 'IO_ERROR', message: 'Cannot read [REDACTED]' });
    expect(lines[2]).toMatchObject({ event: 'command:end', command: 'sdk:emit', exitCode: 0, durationMs: 12 });
  });

  it('a bug is logged with its cause chain (type, code, message, stack), redacted', () => {
    registerSecret(BEARER);
    const log = freshLog();
    const inner = Object.assign(new Error(`open /host/path/${BEARER} failed`), { code: 'ENOENT' });
    const bug = internalError(new TypeError('x is undefined', { cause: inner }));
    logCommandEnd('orchestrate', { exitCode: 70, error: { code: 'INTERNAL', message: bug.message, cause: bug } });
    logCommandEnd('orchestrate', { exitCode: 2, error: { code: 'USAGE', message: '' } });
    const [withCause, without] = log.lines();
    expect(withCause).toMatchObject({
      event: 'command:error',
      code: 'INTERNAL',
      causes: [
        { name: 'TypeError', message: 'x is undefined', stack: expect.stringContaining('logger.test.ts') },
        { name: 'Error', message: 'open /host/path/[REDACTED] failed', code: 'ENOENT' },
      ],
    });
    expect(without).not.toHaveProperty('causes');
    expect(log.read()).not.toContain(BEARER);
  });

  it('a tool failure is logged with its error and causes, the tool name from the table only', () => {
    registerSecret(API_KEY);
    const log = freshLog();
    const err = new Error(`query failed at /srv/secret/${API_KEY}`, { cause: new RangeError('inner cause') });
    logToolFailure({ runId: 'r-1', leaseId: 'l-1', tool: 'grep', error: err });
    logToolFailure({ runId: 'r-1', tool: `bad name ${CANARY}`, error: 'thrown string' });
    const [first, second] = log.lines();
    expect(first).toMatchObject({
      event: 'tool:failed',
      level: 50,
      runId: 'r-1',
      leaseId: 'l-1',
      tool: 'grep',
      error: { name: 'Error', message: 'query failed at /srv/secret/[REDACTED]', stack: expect.stringContaining('logger.test.ts') },
      causes: [{ name: 'RangeError', message: 'inner cause' }],
    });
    expect(second).toMatchObject({ event: 'tool:failed', error: { name: 'string', message: 'thrown string' }, causes: [] });
    expect(second).not.toHaveProperty('tool');
    expect(log.read()).not.toContain(CANARY);
    expect(log.read()).not.toContain(API_KEY);
  });

  it('an unwritable home never fails the caller', () => {
    closeLogger();
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, '');
    configureLogging({ home: join(file, 'home'), env: {} });
    expect(() => getLogger().error('goes nowhere')).not.toThrow();
  });
});

describe('logger without a configured home', () => {
  it('writes nowhere until a command configures its home (never the real ~/.comis)', () => {
    closeLogger();
    configureLogging({ home: undefined, env: {} });
    getLogger().warn('library use, no home configured');
    logEvent({ type: 'run:started', runId: 'r1', leaseId: 'l1', sessionKey: 's', agentId: 'a', language: 'js' });
    // HOME is the suite's empty temp dir (test/setup/isolated-home.ts).
    expect(homedir()).toBe(process.env.COMIS_TEST_HOME);
    expect(readdirSync(homedir())).toEqual([]);
  });
});

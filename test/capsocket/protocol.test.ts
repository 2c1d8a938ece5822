/**
 * CapCallError is a tool's answer (a code and a message for the script), not
 * a fault: it is built without a stack trace, and building it leaves the
 * process's own stack traces as they were.
 */
import { describe, expect, it } from 'vitest';

import { CapCallError } from '../../src/lib/capsocket/protocol.js';

describe('CapCallError', () => {
  it('carries its code and message, and no stack frames', () => {
    const err = new CapCallError('not_found', 'no such file or directory: a.txt');
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('not_found');
    expect(err.message).toBe('no such file or directory: a.txt');
    expect(err.name).toBe('CapCallError');
    expect(err.stack).not.toMatch(/^\s+at /m);
    // A subclass (as web_fetch's host refusal and message_*'s are) is built the same way.
    class Refusal extends CapCallError {}
    expect(new Refusal('host_denied', 'example.com is denied').stack).not.toMatch(/^\s+at /m);
  });

  it('leaves Error.stackTraceLimit as it was: other errors keep their frames', () => {
    const before = Error.stackTraceLimit;
    new CapCallError('busy', 'busy');
    expect(Error.stackTraceLimit).toBe(before);
    expect(new Error('a fault').stack).toMatch(/^\s+at /m);
  });
});

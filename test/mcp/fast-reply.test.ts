/**
 * The hot path's shortcuts in front of the SDK's zod schemas (fast-reply.ts)
 * hold to those schemas: for every reply, valid, malformed or mutated, the
 * shortcut returns what the schema returns or fails with the schema's own
 * error. Positive controls show the shortcuts are taken for the common reply
 * (else the comparisons would only test the SDK against itself).
 */
import { deserializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod/v4';

import { callToolResultSchema, replyDeserializer } from '../../src/lib/mcp/fast-reply.js';
import { textOnlyJsonBytesBound, type McpResultData } from '../../src/lib/mcp/results.js';

/** The same verdict: an equal value, or an error with the same message. */
function expectSame(ours: () => unknown, reference: () => unknown): void {
  let want: { value: unknown } | { error: string };
  try {
    want = { value: reference() };
  } catch (err) {
    want = { error: (err as Error).message };
  }
  if ('error' in want) expect(ours).toThrow(want.error);
  else expect(ours()).toStrictEqual(want.value);
}

/** A small deterministic generator (the cases must be the same on every run). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

const ODD_VALUES: unknown[] = [null, true, 0, -1, 1.5, 2 ** 53, -(2 ** 53) - 2, '', 'x', [], [1], {}, { _meta: {} }, { a: 1 }];

/** Variants of a JSON value: each key dropped, set to an odd value, or a key added, at every depth. */
function mutations(value: unknown, next: () => number, depth = 0): unknown[] {
  if (value === null || typeof value !== 'object' || depth > 4) return [];
  const out: unknown[] = [];
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  const copy = (): Record<string, unknown> | unknown[] => (Array.isArray(value) ? [...value] : { ...(value as Record<string, unknown>) });
  for (const [k, v] of entries) {
    const dropped = copy() as Record<string, unknown>;
    delete dropped[k];
    out.push(Array.isArray(dropped) ? dropped.filter(() => true) : dropped);
    for (let i = 0; i < 3; i++) {
      const odd = copy() as Record<string, unknown>;
      odd[k] = ODD_VALUES[Math.floor(next() * ODD_VALUES.length)];
      out.push(odd);
    }
    for (const inner of mutations(v, next, depth + 1)) {
      const nested = copy() as Record<string, unknown>;
      nested[k] = inner;
      out.push(nested);
    }
  }
  for (const extra of ['_meta', 'extra', 'method', 'error', 'structuredContent', 'annotations']) {
    if (Array.isArray(value)) continue;
    out.push({ ...(value as Record<string, unknown>), [extra]: ODD_VALUES[Math.floor(next() * ODD_VALUES.length)] });
  }
  return out;
}

const PLAIN_RESULTS: unknown[] = [
  { content: [{ type: 'text', text: 'pong' }] },
  { content: [] },
  {
    content: [
      { type: 'text', text: '' },
      { type: 'text', text: 'two\nlines \u202e' },
    ],
    isError: true,
  },
  { content: [{ type: 'text', text: 'x' }], isError: false },
];

const OTHER_RESULTS: unknown[] = [
  {},
  { toolResult: { a: 1 } },
  { content: [{ type: 'text', text: 'x', annotations: { priority: 0.5 } }] },
  { content: [{ type: 'text', text: 'x', extra: 1 }] },
  { content: [{ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }] },
  { content: [{ type: 'resource', resource: { uri: 'file:///a', text: 'hi' } }] },
  { content: [{ type: 'resource_link', uri: 'file:///a', name: 'a' }] },
  { content: [{ type: 'text', text: 'x' }], structuredContent: { a: [1, 2] } },
  { content: [{ type: 'text', text: 'x' }], _meta: { progressToken: 1 } },
  { content: [{ type: 'text' }] },
  { content: [{ type: 'texte', text: 'x' }] },
  { content: { type: 'text', text: 'x' } },
  { content: [null] },
  { content: [{ type: 'text', text: 'x' }], isError: 'yes' },
  { content: [{ type: 'text', text: 'x' }], isError: null },
  { content: [{ type: 'text', text: 'x' }], structuredContent: [1] },
  [],
  null,
  'text',
];

describe('replyDeserializer: the SDK deserializeMessage, with a shortcut for a plain result response', () => {
  const sdk = (line: string) => deserializeMessage(line);
  const ours = replyDeserializer(sdk);

  it('positive control: a plain result response never reaches the SDK parser', () => {
    let calls = 0;
    const counted = replyDeserializer((line) => {
      calls++;
      return deserializeMessage(line);
    });
    expect(counted('{"result":{"content":[{"type":"text","text":"pong"}]},"jsonrpc":"2.0","id":7}')).toStrictEqual({ result: { content: [{ type: 'text', text: 'pong' }] }, jsonrpc: '2.0', id: 7 });
    expect(calls).toBe(0);
    counted('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}');
    expect(calls).toBe(1);
  });

  it('gives what deserializeMessage gives, or its error, for valid, malformed and mutated lines', () => {
    const base = [
      { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'pong' }] } },
      { jsonrpc: '2.0', id: 'abc', result: {} },
      { jsonrpc: '2.0', id: 3, result: { _meta: { progressToken: 1 }, x: 1 } },
      { jsonrpc: '2.0', id: 4, error: { code: -32601, message: 'no such method' } },
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } },
      { jsonrpc: '2.0', id: 5, method: 'ping' },
    ];
    const lines = [
      '',
      'not json',
      'null',
      '[]',
      '{"jsonrpc":"2.0","id":1e400,"result":{}}',
      '{"jsonrpc":"2.0","id":9007199254740993,"result":{}}',
      '{"jsonrpc":"2.0","id":-0,"result":{}}',
      '{"jsonrpc":"2.0","id":1.5,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":{},"__proto__":{"polluted":true}}',
      '{"jsonrpc":"2.0","id":1,"result":{"__proto__":{"polluted":true}}}',
      '{"jsonrpc":"2.0","id":1,"result":{"_meta":null}}',
      '{"jsonrpc":"2.0","id":1,"id":2,"result":{}}',
    ];
    const next = random(15);
    for (const m of base) for (const v of [m, ...mutations(m, next)]) lines.push(JSON.stringify(v));
    expect(lines.length).toBeGreaterThan(150);
    for (const line of lines)
      expectSame(
        () => ours(line),
        () => sdk(line),
      );
  });
});

describe('callToolResultSchema: CallToolResultSchema, with a shortcut for a text-only result', () => {
  const ours = callToolResultSchema(z, CallToolResultSchema);

  it('positive control: a text-only result is passed as it came (no copy made by zod)', () => {
    for (const r of PLAIN_RESULTS) expect(ours.parse(r)).toBe(r);
    const other = { content: [{ type: 'text', text: 'x' }], structuredContent: { a: 1 } };
    expect(ours.parse(other)).not.toBe(other);
  });

  it('gives what CallToolResultSchema gives, or its error, for valid, malformed and mutated results', () => {
    const next = random(2026);
    const cases: unknown[] = [];
    for (const r of [...PLAIN_RESULTS, ...OTHER_RESULTS]) cases.push(r, ...mutations(r, next));
    expect(cases.length).toBeGreaterThan(300);
    for (const r of cases)
      expectSame(
        () => ours.parse(r),
        () => CallToolResultSchema.parse(r),
      );
  });
});

describe('textOnlyJsonBytesBound', () => {
  it('is never below the JSON bytes of a text-only result, whatever its characters', () => {
    const next = random(7);
    const units = ['a', '"', '\\', '\n', '\u0000', '\u001f', '\u007f', 'é', '\u2028', '\ud800', '\udfff', '😀', '\uffff'];
    for (let i = 0; i < 500; i++) {
      const text = Array.from({ length: Math.floor(next() * 300) }, () => units[Math.floor(next() * units.length)]).join('');
      const value: McpResultData = { type: 'McpResult', source: `mcp:${text.slice(0, 40)}.t`, isError: true, content: [], untrusted: true, truncated: true };
      if (i % 5 !== 0) value.text = text;
      expect(textOnlyJsonBytesBound(value)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(value), 'utf8'));
    }
  });
});

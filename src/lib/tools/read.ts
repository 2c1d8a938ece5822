import { closeSync } from 'node:fs';

import { CapCallError } from '../capsocket/server.js';
import { materializeFd, maybeMaterializeValue } from '../resultref/materialize.js';
import type { ToolContext } from './context.js';
import { openConfinedRead, readAllFd, resolveConfined } from './confined-fs.js';

export interface ReadArgs {
  path: string;
  offset?: number | undefined;
  limit?: number | undefined;
}

/**
 * `read`: lines of a workspace file, confined and race-safe (see
 * confined-fs). A whole-file read over the inline threshold is streamed into
 * a ResultRef (the payload never sits whole in comis's memory); a slice over
 * the threshold is materialized too.
 */
export function readTool(ctx: ToolContext, args: ReadArgs): unknown {
  const rel = resolveConfined(ctx.workspaceReal, args.path, ctx.jailWorkspace);
  const file = openConfinedRead(ctx.workspaceReal, rel);
  try {
    const whole = args.offset === undefined && args.limit === undefined;
    if (ctx.results && whole && file.stat.size > ctx.results.thresholdBytes) {
      return materializeFd(ctx.results, file.fd, file.relPath);
    }
    if (file.stat.size > ctx.maxReadBytes) {
      throw new CapCallError('too_large', `file is ${file.stat.size} bytes, over the ${ctx.maxReadBytes}-byte read cap: slice it in the jail instead`);
    }
    const text = readAllFd(file.fd, file.stat.size, ctx.maxReadBytes).toString('utf8');
    const all = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
    const totalLines = text === '' ? 0 : all.length;
    const offset = args.offset ?? 0;
    const end = args.limit === undefined ? totalLines : Math.min(totalLines, offset + args.limit);
    const slice = offset >= totalLines ? [] : all.slice(offset, end);
    const result = {
      path: file.relPath,
      content: slice.join('\n'),
      offset,
      lines: slice.length,
      totalLines,
      bytes: file.stat.size,
      truncated: end < totalLines,
    };
    if (!ctx.results) return result;
    return maybeMaterializeValue(ctx.results, result, () => ({ text: result.content, nameHint: file.relPath }));
  } finally {
    closeSync(file.fd);
  }
}

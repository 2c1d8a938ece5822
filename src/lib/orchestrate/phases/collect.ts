/**
 * Phase 6, collect: the script's output while it runs, and its end. Stdout is
 * decoded as a UTF-8 stream (a character may straddle two chunks) and counted
 * in bytes against the hard cap; stderr keeps a bounded tail. comis's own
 * second-line timer and the caller's abort signal kill the jail.
 */
import { closeSync, constants as fsConstants, openSync, writeSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

import type { JailedProcess, JailExit } from '../../jail/types.js';
import type { FailureClass } from '../../store/runs.js';
import { boundStdout, DEFAULT_REENTRY_CHARS, tailOf } from '../stdout.js';
import { SECOND_LINE_GRACE_MS, STDERR_TAIL_CHARS } from './constants.js';

const KEEP_HEAD = Math.floor(DEFAULT_REENTRY_CHARS * 0.6);
const KEEP_TAIL = DEFAULT_REENTRY_CHARS - KEEP_HEAD;

/**
 * The script's stdout as comis keeps it: decoded across chunk boundaries,
 * counted in bytes. With a tee file (coordinator children) every byte goes
 * to the file and memory keeps only a head and a rolling tail.
 */
export class StdoutCollector {
  /** Bytes received (including the chunk that passed the cap). */
  bytes = 0;
  private text = '';
  /** With a tee, the characters dropped between head and tail. */
  private omittedChars = 0;
  private readonly decoder = new StringDecoder('utf8');
  private teeFd: number | undefined;

  constructor(private readonly capBytes: number) {}

  /** Tees every byte into `file` (created 0600, must not exist). */
  openTee(file: string): void {
    this.teeFd = openSync(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
  }

  /** Takes one chunk; false (and the chunk dropped) once the byte cap is passed. */
  push(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    if (this.bytes > this.capBytes) return false;
    this.text += this.decoder.write(chunk);
    if (this.teeFd !== undefined) {
      writeSync(this.teeFd, chunk);
      if (this.text.length > 4 * DEFAULT_REENTRY_CHARS) {
        this.omittedChars += this.text.length - KEEP_HEAD - KEEP_TAIL;
        this.text = this.text.slice(0, KEEP_HEAD) + this.text.slice(this.text.length - KEEP_TAIL);
      }
    }
    return true;
  }

  /** Flushes a trailing partial character (not after the cap: the stream was cut). */
  end(): void {
    if (this.bytes <= this.capBytes) this.text += this.decoder.end();
  }

  /** Closes the tee file; idempotent. */
  close(): void {
    if (this.teeFd !== undefined) closeSync(this.teeFd);
    this.teeFd = undefined;
  }

  /** What re-enters the caller: head and tail with a marker between when over the re-entry bound. */
  bounded(): { text: string; truncated: boolean } {
    if (this.omittedChars === 0) return boundStdout(this.text);
    const omitted = this.omittedChars + this.text.length - KEEP_HEAD - KEEP_TAIL;
    return { text: `${this.text.slice(0, KEEP_HEAD)}\n[… ${omitted} characters of stdout omitted by comis …]\n${this.text.slice(this.text.length - KEEP_TAIL)}`, truncated: true };
  }
}

/** What the run's end looked like to comis, before classification. */
export interface RunVerdict {
  /** Set when comis ended the run itself (its timer, the stdout cap) or by the later phases. */
  failureClass?: FailureClass;
  exitCode: number | null;
  /** Bounded, unredacted stderr tail (redacted when shown). */
  stderr: string;
}

/** Collects the child's output until the whole jail is gone; comis's own kills set `verdict.failureClass`. */
export async function collectRun(child: JailedProcess, stdout: StdoutCollector, verdict: RunVerdict, opts: { timeoutMs: number; secondLineTimerMs?: number; signal?: AbortSignal }): Promise<JailExit> {
  const timer = setTimeout(
    () => {
      verdict.failureClass ??= 'timeout';
      child.kill();
    },
    opts.secondLineTimerMs ?? opts.timeoutMs + SECOND_LINE_GRACE_MS,
  );
  const onAbort = (): void => child.kill();
  if (opts.signal?.aborted) child.kill();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  const stderrText = new StringDecoder('utf8');
  child.stdout.on('data', (chunk: Buffer) => {
    if (!stdout.push(chunk)) {
      verdict.failureClass ??= 'stdout_cap';
      child.kill();
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    verdict.stderr = tailOf(verdict.stderr + stderrText.write(chunk), STDERR_TAIL_CHARS * 4);
  });
  const exit = await child.exited;
  clearTimeout(timer);
  opts.signal?.removeEventListener('abort', onAbort);
  stdout.end();
  verdict.stderr = tailOf(verdict.stderr + stderrText.end(), STDERR_TAIL_CHARS * 4);
  return exit;
}

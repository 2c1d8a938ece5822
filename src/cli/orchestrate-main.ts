/**
 * The body of `comis orchestrate`, shared by the oclif command and the fast
 * path: read the script, load config and store, run, render. Heavy modules are
 * imported here, lazily, in the order the run needs them.
 */
import { readFileSync } from 'node:fs';

import { ComisError, ExitCode, type ExitCodeValue } from '../lib/errors.js';
import type { OrchestrateResult } from '../lib/orchestrate/runner.js';
import { newSessionKey, resolveRequestedTimeout, runAndRecord } from '../lib/orchestrate/execute.js';
import type { OrchestrateInput } from './orchestrate-flags.js';
import { escapeControls } from './terminal-text.js';

export interface OrchestrateIo {
  json: boolean;
  addWarning: (message: string) => void;
}

export async function executeOrchestrate(input: OrchestrateInput, io: OrchestrateIo): Promise<{ result: OrchestrateResult; exitStatus: ExitCodeValue }> {
  const timing = process.env.COMIS_TIMING === '1';
  // Wall time since the process started, and the CPU time of this process (all its threads) so far:
  // on a loaded machine the second says what comis itself spent.
  const mark = (phase: string): void => {
    if (!timing) return;
    const cpu = process.cpuUsage();
    process.stderr.write(`timing ${phase} ${performance.now().toFixed(1)}\ntiming-cpu ${phase} ${((cpu.user + cpu.system) / 1000).toFixed(1)}\n`);
  };
  mark('parsed');
  const timeoutMs = resolveRequestedTimeout(input.timeoutMs, '--timeout-ms');
  if (input.resume !== undefined) {
    if (input.script !== undefined || input.lang !== undefined) {
      throw new ComisError('USAGE', `--resume ${input.resume} takes no script${input.lang !== undefined ? ' and no --lang' : ''}: a resumed run re-spawns the pinned original bytes of that run, and new bytes are never accepted.`, {
        hint: `Run \`comis orchestrate --resume ${input.resume}\` alone, or start a new run with the script.`,
      });
    }
    const { prepareResume } = await import('./resume-main.js');
    const resume = await prepareResume(input.resume, input.agent);
    const result = await resume.run((recordOptions) =>
      runAndRecord({ ...recordOptions, sessionKey: input.session ?? recordOptions.sessionKey, timeoutMs, mark, approve: input.yes ? async () => true : resume.approve, onWarning: io.addWarning }),
    );
    if (!io.json) renderHuman(result, undefined, { raw: input.raw === true, quiet: input.quiet === true });
    return { result: result.public, exitStatus: result.public.outcome === 'failure' ? ExitCode.FAILURE : ExitCode.OK };
  }
  if (input.script === undefined) {
    throw new ComisError('USAGE', 'Missing the script argument.', { hint: 'Pass a path, - for stdin, or --resume <runId> to continue a durable run.' });
  }
  const script = input.script;
  const { languageFromPath } = await import('../lib/orchestrate/transpile.js');
  const language = input.lang ?? (script === '-' ? undefined : languageFromPath(script));
  if (!language) {
    throw new ComisError('USAGE', script === '-' ? 'A script read from stdin needs --lang ts|js|py.' : `Cannot tell the language of ${script} from its extension.`, {
      hint: 'Pass --lang ts, --lang js or --lang py.',
    });
  }
  let source: string;
  try {
    source = readFileSync(script === '-' ? 0 : script, 'utf8');
  } catch (err) {
    throw new ComisError('IO_ERROR', `Cannot read the script ${script}: ${(err as NodeJS.ErrnoException).code ?? 'error'}.`, { hint: 'Check the path.' });
  }
  const { loadConfig, resolveAgent } = await import('../lib/config/load.js');
  const loaded = await loadConfig();
  const agent = resolveAgent(loaded, input.agent);
  mark('config');
  const generated = input.session === undefined;
  const sessionKey = input.session ?? newSessionKey();
  const { askApproval, askSendApproval } = await import('./approval.js');
  const result = await runAndRecord({
    source,
    displayName: script === '-' ? `stdin.${language}` : script,
    language,
    agent,
    home: loaded.home,
    sessionKey,
    timeoutMs,
    mark,
    approve: input.yes ? async () => true : askApproval(script === '-', agent.id),
    noRepair: input.noRepair === true,
    approveMessage: input.yes ? async () => true : askSendApproval(script === '-'),
    onWarning: io.addWarning,
  });
  mark('recorded');
  if (timing) process.stderr.write(`timing maxrss-kb ${process.resourceUsage().maxRSS}\n`);
  if (!io.json) renderHuman(result, generated ? sessionKey : undefined, { raw: input.raw === true, quiet: input.quiet === true });
  return { result: result.public, exitStatus: result.public.outcome === 'failure' ? ExitCode.FAILURE : ExitCode.OK };
}

/**
 * Human output. The script's stdout is the script's: to a terminal its
 * control characters are shown escaped (see escapeControls) unless `raw`;
 * to a pipe or file it goes byte for byte. The stderr tail is always
 * escaped: it is diagnosis, and often lands on a terminal via 2>&1.
 */
function renderHuman(run: { public: OrchestrateResult }, generatedSession: string | undefined, opts: { raw: boolean; quiet: boolean }): void {
  const result = run.public;
  process.stdout.write(process.stdout.isTTY && !opts.raw ? escapeControls(result.stdout) : result.stdout);
  const where = `run ${result.runId}${generatedSession ? `, session ${generatedSession}` : ''}`;
  if (result.outcome === 'failure') {
    const code = result.exitCode === null ? '' : `, exit code ${result.exitCode}`;
    let text = `comis: ${where} failed: ${result.failureClass}${code}, after ${result.durationMs} ms\n`;
    if (result.failureClass === 'timeout') text += `comis: the script ran past its ${result.timeoutMs} ms timeout and was killed (raise it with --timeout-ms)\n`;
    if (result.resumable) {
      text += `comis: the run is resumable${result.resumable.checkpoint ? ' from its last checkpoint' : ' (no checkpoint yet: it starts over)'} until ${new Date(result.resumable.expiresAt).toISOString()}: comis orchestrate --resume ${result.runId}\n`;
    }
    if (result.failureClass === 'stdout_cap') text += 'comis: the script printed more than the stdout hard cap and was killed\n';
    if (result.stderrTail) {
      const tail = escapeControls(result.stderrTail);
      text += `--- stderr (last ${result.stderrTail.length} chars) ---\n${tail}${tail.endsWith('\n') ? '' : '\n'}`;
    }
    process.stderr.write(text);
  } else if (!opts.quiet) {
    process.stderr.write(successLine(result, generatedSession));
  }
}

/**
 * The one line a successful run ends with, on stderr (stdout stays the script's):
 * `comis: run r-… ok in 146 ms, 2 ResultRefs (5.1 MB, ~1,275,000 tokens kept out), session s-… · comis explain --last`
 */
export function successLine(result: OrchestrateResult, generatedSession?: string): string {
  const parts = [`comis: run ${result.runId} ok in ${result.durationMs} ms`];
  if (result.resultRefs.count > 0) {
    const kept = result.savings ? `, ~${result.savings.estSavedTokens.toLocaleString('en-US')} tokens kept out` : '';
    parts.push(`${result.resultRefs.count} ResultRef${result.resultRefs.count === 1 ? '' : 's'} (${formatBytes(result.resultRefs.bytes)}${kept})`);
  }
  if (generatedSession) parts.push(`session ${generatedSession}`);
  return `${parts.join(', ')} · comis explain --last\n`;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

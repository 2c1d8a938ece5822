import { Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { ComisError, ExitCode } from '../../lib/errors.js';

export interface SdkEmitResult {
  dir: string;
  lang: string;
  mode: 'write' | 'check';
  files: string[];
  drift: { file: string; status: 'missing' | 'changed'; line?: number }[];
}

export default class SdkEmit extends BaseCommand {
  static override summary = 'Write the typed comis_tools SDK that jailed scripts import.';

  static override description = `Generates the SDK from the single tool-to-capability table, the same table the capability socket gates on:
  comis_tools.ts              typed source, for TypeScript scripts and editors
  comis_tools.js + .d.ts      runtime for JavaScript (and transpiled TypeScript)
  comis_tools.py              synchronous Python module, standard library only
Output is deterministic: emitting twice gives byte-identical files, and it is exactly what \`comis orchestrate\` mounts into the jail. Use --check in CI to fail when a committed copy drifted.`;

  static override examples = [
    { description: 'Write all four files into ./sdk', command: '<%= config.bin %> <%= command.id %> --out sdk' },
    { description: 'Only the Python module', command: '<%= config.bin %> <%= command.id %> --lang py --out tools' },
    { description: 'CI: fail (exit 1) when ./sdk differs from what would be emitted', command: '<%= config.bin %> <%= command.id %> --check sdk' },
  ];

  static override flags = {
    out: Flags.string({ char: 'o', description: 'Directory to write the SDK into.', default: '.', exclusive: ['check'] }),
    lang: Flags.string({
      char: 'l',
      description: 'Which SDK flavour to emit.',
      options: ['ts', 'js', 'py', 'all'],
      default: 'all',
    }),
    check: Flags.string({
      description: 'Do not write: compare the files in DIR with what would be emitted; exit 1 on drift.',
      helpValue: 'DIR',
    }),
  };

  async run(): Promise<SdkEmitResult> {
    const { flags } = await this.parse(SdkEmit);
    const { emitSdk } = await import('../../lib/sdk/emit.js');
    const { checkSdkFiles, writeSdkFiles } = await import('../../lib/sdk/files.js');
    const lang = flags.lang as 'ts' | 'js' | 'py' | 'all';
    const files = emitSdk(lang);
    if (flags.check !== undefined) {
      const drift = checkSdkFiles(flags.check, files);
      if (drift.length > 0) {
        this.setExitStatus(ExitCode.FAILURE);
        if (!this.jsonEnabled()) {
          const lines = drift.map((d) => `  ${d.file}: ${d.status === 'missing' ? 'missing' : `differs from line ${d.line}`}`);
          process.stderr.write(
            `SDK drift in ${flags.check} (${drift.length} file${drift.length === 1 ? '' : 's'}):\n${lines.join('\n')}\nRun \`comis sdk emit --out ${flags.check}\` to regenerate.\n`,
          );
        }
      } else if (!this.jsonEnabled()) {
        this.log(`SDK in ${flags.check} is up to date (${[...files.keys()].join(', ')}).`);
      }
      return { dir: flags.check, lang, mode: 'check', files: [...files.keys()], drift };
    }
    if (flags.out.trim() === '') throw new ComisError('USAGE', '--out must name a directory.');
    const written = writeSdkFiles(flags.out, files);
    if (!this.jsonEnabled()) for (const file of written) this.log(`wrote ${file}`);
    return { dir: flags.out, lang, mode: 'write', files: [...files.keys()], drift: [] };
  }
}

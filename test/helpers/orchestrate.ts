import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { runComis, type CliResult } from './cli.js';
import { tempDir } from './temp.js';

export interface Home {
  home: string;
  workspace: (agent?: string) => string;
  script: (name: string, code: string) => string;
  run: (args: string[], options?: { env?: Record<string, string | undefined>; input?: string; timeoutMs?: number }) => CliResult;
}

/** An isolated COMIS_HOME with an optional config, and a helper to run `comis` in it. */
export function makeHome(config?: string): Home {
  const home = tempDir('comis-home-');
  if (config !== undefined) writeFileSync(join(home, 'config.yaml'), config);
  const scripts = tempDir('comis-scripts-');
  return {
    home,
    workspace: (agent = 'default') => {
      const ws = join(home, 'workspaces', agent);
      mkdirSync(ws, { recursive: true });
      return ws;
    },
    script: (name, code) => {
      const path = join(scripts, name);
      writeFileSync(path, code);
      return path;
    },
    run: (args, options = {}) => runComis(args, { home, ...options }),
  };
}

import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * The comis home directory: `$COMIS_HOME` when set, else `~/.comis`.
 * Everything comis keeps (config, store, logs, workspaces) lives below it.
 */
export function comisHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.COMIS_HOME;
  return fromEnv && fromEnv.trim() !== '' ? resolve(fromEnv) : join(homedir(), '.comis');
}

export function configPath(home = comisHome()): string {
  return join(home, 'config.yaml');
}

export function storePath(home = comisHome()): string {
  return join(home, 'comis.db');
}

export function logsDir(home = comisHome()): string {
  return join(home, 'logs');
}

export function workspacesDir(home = comisHome()): string {
  return join(home, 'workspaces');
}

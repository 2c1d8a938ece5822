/**
 * Atomic writes of files only the invoking user may read, for the caches under
 * `$COMIS_HOME/cache` (compiled config, jail verdict, probe report, emitted SDK).
 *
 * Security property: the directory is created `0700`, and an existing one is
 * used only when it is a real directory (not a link) owned by us; one that is
 * wider than `0700` is narrowed first, so nobody else can plant or swap an
 * entry that a later run would trust. The temp file is created exclusively
 * (`wx`, never through an existing name) with mode `0600`, then renamed over
 * the target, so a reader sees the old entry or the new one, never half.
 */
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** Creates `dir` 0700, or narrows an existing one of ours to 0700; throws when it is not a directory we own. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  const uid = process.geteuid?.();
  if (uid !== undefined && st.uid !== uid) throw new Error(`${dir} is not owned by uid ${uid}`);
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** Writes `text` to `file` atomically, 0600, in a private directory (see the module's contract). Throws on failure. */
export function writePrivateFileAtomic(file: string, text: string | Uint8Array): void {
  ensurePrivateDir(dirname(file));
  const temp = `${file}.${process.pid}.${Date.now().toString(36)}.tmp`;
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
    chmodSync(temp, 0o600); // the umask may have narrowed it further, never widened; this states it
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

/**
 * Reads a file written by {@link writePrivateFileAtomic}, or throws: only when
 * its directory is ours and writable by nobody else, and the file is a regular
 * file of ours writable by nobody else, so a cache entry someone else planted
 * or could swap is never trusted (the caller treats a throw as a miss).
 */
export function readPrivateFile(file: string): string {
  return readPrivateBytes(file).toString('utf8');
}

/** {@link readPrivateFile} for binary entries (the V8 code cache of the orchestrate bundle). */
export function readPrivateBytes(file: string): Buffer {
  const uid = process.geteuid?.();
  const dir = lstatSync(dirname(file));
  if (!dir.isDirectory() || (uid !== undefined && dir.uid !== uid) || (dir.mode & 0o022) !== 0) throw new Error(`${dirname(file)} is not a private directory`);
  const st = lstatSync(file);
  if (!st.isFile() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o022) !== 0) throw new Error(`${file} is not a private file`);
  return readFileSync(file);
}

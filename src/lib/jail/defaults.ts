/**
 * Default resource limits of a jail: the values of `jailLimitsSchema` in
 * src/lib/config/schema.ts (kept here so the jail needs no zod; a test
 * asserts they match).
 */
import { DEFAULT_TMP_INODES } from './types.js';

export const DEFAULT_JAIL_LIMITS = { memoryMb: 4096, maxProcesses: 64, fileSizeMb: 256, tmpSizeMb: 64, tmpInodes: DEFAULT_TMP_INODES } as const;

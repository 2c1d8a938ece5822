import { spawnSync } from 'node:child_process';
import { chmodSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

describe('scripts/setup.sh', () => {
  it('as a non-root user without sudo: names the missing packages and the command, exits 2, installs nothing', () => {
    // A PATH with only what the script needs before its package check, and an `id` that says uid 1000:
    // bwrap, jq, setpriv, python3 and sudo are all absent from it.
    const bin = tempDir('comis-setup-path-');
    symlinkSync('/usr/bin/dirname', join(bin, 'dirname'));
    writeFileSync(join(bin, 'id'), '#!/bin/sh\necho 1000\n');
    chmodSync(join(bin, 'id'), 0o755);
    const res = spawnSync('/bin/bash', [join(repoRoot, 'scripts/setup.sh')], { env: { PATH: bin }, encoding: 'utf8', timeout: 30_000 });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('missing system packages: bubblewrap jq util-linux python3');
    expect(res.stderr).toContain('apt-get install -y --no-install-recommends bubblewrap jq util-linux python3');
    expect(res.stderr).not.toMatch(/sudo: command not found/);
    expect(res.stdout).not.toContain('npm ci');
  });
});

import { describe, expect, it } from 'vitest';

import { editDistance, nearest, suggestCommand } from '../../src/lib/suggest.js';

const IDS = ['explain', 'fleet', 'jail:probe', 'orchestrate', 'run', 'sdk:emit', 'skill:scan'];

describe('did-you-mean', () => {
  it('counts insertions, deletions, substitutions and adjacent transpositions as one edit', () => {
    expect(editDistance('skil', 'skill')).toBe(1);
    expect(editDistance('explian', 'explain')).toBe(1);
    expect(editDistance('emitt', 'emit')).toBe(1);
    expect(editDistance('', 'run')).toBe(3);
    expect(editDistance('run', 'run')).toBe(0);
  });

  it('suggests a command from the typed words, multi-word ids and bare leaves included', () => {
    expect(suggestCommand(['skil', 'scan', 'x'], IDS)).toBe('skill scan');
    expect(suggestCommand(['sdk', 'emitt'], IDS)).toBe('sdk emit');
    expect(suggestCommand(['orchestrat'], IDS)).toBe('orchestrate');
    expect(suggestCommand(['probe'], IDS)).toBe('jail probe');
    expect(suggestCommand(['scan', 'skills/'], IDS)).toBe('skill scan');
    expect(suggestCommand(['frobnicate'], IDS)).toBeUndefined();
    expect(suggestCommand(['rm'], IDS)).toBeUndefined(); // 2 edits from "run" is a different word, not a typo
  });

  it('suggests a flag only when it is a likely typo', () => {
    const flags = ['--json', '--help', '--check', '--out', '--lang'];
    expect(nearest('--chek', flags)).toBe('--check');
    expect(nearest('--jsn', flags)).toBe('--json');
    expect(nearest('--frobnicate', flags)).toBeUndefined();
    expect(nearest('--json', flags)).toBeUndefined(); // exact: nothing to suggest
  });
});

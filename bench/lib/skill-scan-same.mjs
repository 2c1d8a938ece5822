#!/usr/bin/env node
// Sameness of two skill scanners (not a bench: run by hand). Compares JSON.stringify of the full
// results of BENCH_BEFORE_ROOT's dist scanner and this checkout's on every corpus file (as Markdown,
// as run.sh, as x.py, with random hiding tricks), every rule's worst case, every rule case of
// test/skills/rule-cases.ts with hiding tricks, malicious/benign mixes and the concatenated corpus.
//   BENCH_BEFORE_ROOT=<a built checkout of main> COMIS_SKILL_CORPUS=<corpus> node bench/lib/skill-scan-same.mjs
// QUICK=1 takes every 5th corpus file. Prints the number of inputs, findings compared and differences.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

import { closeFinalFence } from './close-fence.mjs';

const here = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const before = process.env.BENCH_BEFORE_ROOT;
if (!before) {
  process.stdout.write('BENCH_BEFORE_ROOT=<a built checkout> is required\n');
  process.exit(2);
}
const corpus = process.env.COMIS_SKILL_CORPUS ?? join(here, '..', 'shared', 'corpus', 'skills');
const A = await import(join(before, 'dist/lib/skills/scanner.js'));
const B = await import(join(here, 'dist/lib/skills/scanner.js'));
const { RULES } = await import(join(here, 'dist/lib/skills/rules.js'));
const { analyzeMarkdown } = await import(join(here, 'dist/lib/skills/markdown-regions.js'));
const tmp = mkdtempSync(join(tmpdir(), 'skill-scan-same-'));
await build({ entryPoints: [join(here, 'test/skills/rule-cases.ts')], bundle: true, format: 'esm', outfile: join(tmp, 'rule-cases.mjs'), logLevel: 'error' });
const { CASES } = await import(join(tmp, 'rule-cases.mjs'));
rmSync(tmp, { recursive: true, force: true });
const closed = (text) => closeFinalFence(text, analyzeMarkdown);
const out = (...xs) => process.stdout.write(`${xs.join(' ')}\n`);
const files = [];
for (const d of ['benign', 'malicious']) for (const f of readdirSync(join(corpus, d)).sort()) files.push([`${d}/${f}`, readFileSync(join(corpus, d, f), 'utf8')]);
let inputs = 0,
  findings = 0,
  diffs = 0;
const cmp = (name, text, opts) => {
  const a = JSON.stringify(A.scanSkillContent(text, opts));
  const b = JSON.stringify(B.scanSkillContent(text, opts));
  inputs++;
  findings += JSON.parse(a).findings.length;
  if (a !== b) {
    diffs++;
    if (diffs < 10) out('DIFF', name, JSON.stringify(opts), a.length, b.length);
  }
};
let seed = 12345;
const rnd = (n) => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
};
const tricks = [
  '\u200b',
  '\u200d',
  '<!-- x -->',
  '<!--y-->',
  '\u00ad',
  '\u202e',
  '\uFF41',
  '\u0430',
  '\u03a3',
  '\u0130',
  'e\u0301',
  '\u{E0041}\u{E0042}',
  '\uFB01',
  '\u2024',
  '\u00a0',
  '\u2028',
  '<!--\n\n-->',
  '\u0441url',
  'ｃｕｒｌ',
  '\u{1F600}',
  '<!-- a',
  '-->',
];
const mutate = (text, k) => {
  let t = text;
  for (let i = 0; i < k; i++) {
    const p = rnd(t.length + 1);
    t = t.slice(0, p) + tricks[rnd(tricks.length)] + t.slice(p);
  }
  return t;
};
const subset = process.env.QUICK ? files.filter((_, i) => i % 5 === 0) : files;
for (const [name, text] of subset) {
  cmp(name, text, {});
  cmp(name, text, { kind: 'script', path: 'run.sh' });
  cmp(name, text, { kind: 'script', path: 'x.py' });
  cmp(name, mutate(text, 3), {});
  cmp(name, mutate(text, 12), {});
  cmp(name, mutate(text, 6), { kind: 'script', path: 'run.sh' });
}
out('corpus done', inputs, findings, diffs);
const pad = files
  .filter(([n]) => n.startsWith('benign'))
  .map(([, t]) => t)
  .join('\n\n')
  .slice(0, 200_000);
for (const r of RULES) {
  if (r.kind === 'artifact' || r.kind === 'spec') continue;
  const unit = r.worstCase;
  const big = unit.repeat(Math.ceil(20_000 / unit.length));
  cmp(r.id, big, {});
  cmp(r.id, big, { kind: 'script', path: 'run.sh' });
  cmp(r.id, mutate(big, 5), {});
  // a rule case far from changes and near them
  for (const tp of [...(CASES[r.id]?.tp ?? []), ...(CASES[r.id]?.tn ?? [])]) {
    const s = typeof tp === 'string' ? tp : (tp.text ?? '');
    if (typeof tp !== 'string') cmp(r.id, s, { kind: tp.kind, path: tp.path });
    if (!s) continue;
    for (const tr of tricks.slice(0, 14)) {
      cmp(r.id + ':tp', `${pad.slice(0, 5000)}\n\n${tr}${s}\n\n${pad.slice(5000, 9000)}`, {});
      cmp(r.id + ':tp2', `${pad.slice(0, 3000)}${s.slice(0, 3)}${tr}${s.slice(3)} ${tr}\n${pad.slice(3000, 12000)}`, {});
      cmp(r.id + ':tps', `${s}${tr}\n${pad.slice(0, 8000)}${tr}${s}`, { kind: 'script', path: 'x.sh' });
    }
  }
}
out('rules done', inputs, findings, diffs);
// Malicious files interleaved with benign ones, with hiding tricks, at various distances
const mal = files.filter(([n]) => n.startsWith('malicious')).map(([, t]) => t);
const ben = files.filter(([n]) => n.startsWith('benign')).map(([, t]) => t);
for (let i = 0; i < 60; i++) {
  const parts = [];
  for (let k = 0; k < 6; k++) parts.push(k % 2 ? mutate(mal[rnd(mal.length)], 4) : ben[rnd(ben.length)]);
  cmp('mix' + i, parts.join('\n\n'), {});
  if (i % 4 === 0) cmp('mixs' + i, parts.join('\n'), { kind: 'script', path: 'a.sh' });
}
out('mix done', inputs, findings, diffs);
const concatenated = files
  .filter(([n]) => n.startsWith('benign'))
  .map(([, t]) => closed(t))
  .join('\n\n');
cmp('concat', concatenated, {});
cmp('concat-mut', mutate(concatenated, 300), {});
cmp('concat-mut2', mutate(concatenated, 3000), {});
cmp('concat-script', concatenated, { kind: 'script', path: 'run.sh' });
out('TOTAL inputs', inputs, 'findings compared', findings, 'diffs', diffs);

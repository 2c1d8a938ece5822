// The concatenated-corpus benches' one piece of Markdown care (bench/skill-scan.mjs and
// bench/lib/skill-scan-same.mjs): a file that ends inside a code fence it never closes
// (CommonMark: the block runs to the end of the document) would turn the next file of a plain
// concatenation into code, so the concatenated text would be other documents than the files
// (awesome-copilot's az-cost-optimize does: its findings differed only there). Each such file gets
// its closing fence before the join. `analyzeMarkdown` is the build's own (each bench loads its tree's).
export function closeFinalFence(text, analyzeMarkdown) {
  const last = analyzeMarkdown(text)
    .spans.filter((s) => s.region === 'fenced-code')
    .at(-1);
  if (!last || last.end !== text.length) return text;
  const lines = text.slice(last.start).split('\n');
  const marker = /^ {0,3}(`{3,}|~{3,})/.exec(lines[0])[1];
  const tail =
    lines
      .slice(1)
      .filter((l) => l.trim() !== '')
      .at(-1)
      ?.trim() ?? '';
  const closes = tail.length >= marker.length && tail[0] === marker[0] && /^(`+|~+)$/.test(tail);
  return closes ? text : `${text}\n${marker}`;
}

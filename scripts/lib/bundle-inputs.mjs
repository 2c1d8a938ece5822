// The dist files an esbuild bundle of the fast paths was built from, with their sizes: the list
// bin/comis.js checks before it uses a bundle (`currentBundle`: each input keeps its size and is
// not newer than the bundle). Packages must stay external: an input outside dist/ is an error.
import { statSync } from 'node:fs';
import { join, relative } from 'node:path';

export function bundleInputs(metafile, root, dist, script) {
  const inputs = {};
  for (const input of Object.keys(metafile.inputs).sort()) {
    const path = relative(dist, join(root, input));
    if (path.startsWith('..')) throw new Error(`${script}: ${input} is outside dist/ (packages must stay external)`);
    inputs[path] = statSync(join(dist, path)).size;
  }
  return inputs;
}

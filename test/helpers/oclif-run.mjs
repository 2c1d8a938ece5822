// Runs a comis command through oclif (the command class), bypassing bin/comis.js's fast paths,
// from any working directory: node test/helpers/oclif-run.mjs skill scan skills --json
import { execute } from '@oclif/core';

await execute({ dir: new URL('../../package.json', import.meta.url).href, args: process.argv.slice(2) });

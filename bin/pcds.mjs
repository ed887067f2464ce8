#!/usr/bin/env node
// Entry point of the `pcds` command: runs the compiled CLI from dist/ (built by `npm run build`,
// which `npm ci` and `npm install` run in a clone through the `prepare` script).
import { existsSync } from 'node:fs';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('pcds: dist/ is missing; run `npm run build` in the project folder first\n');
  process.exit(1);
}
await import(main.href);

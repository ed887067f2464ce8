// The package's version, as its package.json says (one level above src/ and dist/ alike).
import { readFileSync } from 'node:fs';

let version: string | undefined;

export function packageVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
  return version;
}

// docs/configuration.md against the configuration schema: its "Settings" tables name exactly the
// settings of `envSchema`, each default they show is the schema's, and the variables read beside
// the schema (tools, tests, the emulator) are listed apart, read by the code and not settings.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envSchema } from '../../../src/config.js';
import { projectRoot } from '../../../src/temporal/cli-binary.js';
import { tableRowsUnder } from './markdown.js';

const root = projectRoot();
const page = readFileSync(join(root, 'docs/configuration.md'), 'utf8');
const schemaNames = Object.keys(envSchema.shape) as (keyof typeof envSchema.shape)[];

/** Each row's variable names (first cell) and the literals of its default (second cell). */
function documented(heading: string): { names: string[]; defaults: string[] }[] {
  return tableRowsUnder(page, heading)
    .map(([names = '', defaults = '']) => ({
      names: [...names.matchAll(/`(PCDS_[A-Z0-9_]+)`/g)].map((m) => m[1]),
      defaults: [...defaults.matchAll(/`([^`]*)`/g)].map((m) => m[1]),
    }))
    .filter((row) => row.names.length > 0);
}

const settings = documented('## Settings');
const besides = documented('## Tools, tests and the emulator');

/** The text of the project's code, tests and tools (no recorded histories, no build output). */
function codeText(): string {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'histories' && name !== 'node_modules') walk(path);
      } else if (/\.(ts|mts|cts|mjs|js|cjs)$/.test(name) || dir.endsWith('.ci')) {
        texts.push(readFileSync(path, 'utf8'));
      }
    }
  };
  for (const dir of ['src', 'scripts', 'test', 'bench', '.ci']) walk(join(root, dir));
  return texts.join('\n');
}

describe('docs/configuration.md', () => {
  it('rule: the settings tables name every setting of the schema, and no other', () => {
    const names = settings.flatMap((r) => r.names);
    expect(
      names.filter((n, i) => names.indexOf(n) !== i),
      'listed twice',
    ).toEqual([]);
    expect(
      schemaNames.filter((n) => !names.includes(n)),
      'in src/config.ts, missing from docs/configuration.md',
    ).toEqual([]);
    expect(
      names.filter((n) => !(schemaNames as string[]).includes(n)),
      'in docs/configuration.md, not a setting of src/config.ts',
    ).toEqual([]);
  });

  it('rule: a default the schema gives is the one the table shows', () => {
    const wrong: string[] = [];
    for (const { names, defaults } of settings) {
      names.forEach((name, i) => {
        const parsed = envSchema.shape[name as (typeof schemaNames)[number]].safeParse(undefined);
        if (!parsed.success || parsed.data === undefined) return;
        const expected = String(parsed.data);
        // A row of several settings gives their defaults in the same order, when it gives each.
        const shown = defaults.length === names.length ? [defaults[i]] : defaults;
        if (!shown.includes(expected))
          wrong.push(
            `${name}: the schema's default is ${expected}, the table shows ${shown.join(', ')}`,
          );
      });
    }
    expect(wrong).toEqual([]);
  });

  it('rule: the variables listed beside the settings are read by the code and are not settings', () => {
    const code = codeText();
    const names = besides.flatMap((r) => r.names);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => (schemaNames as string[]).includes(n))).toEqual([]);
    expect(
      names.filter((n) => !code.includes(n)),
      'named by no code',
    ).toEqual([]);
  });

  it('rule: every PCDS_ variable the code reads from the environment is documented', () => {
    const read = new Set(
      [
        ...codeText().matchAll(
          /(?:process\.env|\benv)\.(PCDS_[A-Z0-9_]+)|\.env\('(PCDS_[A-Z0-9_]+)'\)/g,
        ),
      ].map((m) => m[1] ?? m[2]),
    );
    const listed = new Set([...settings, ...besides].flatMap((r) => r.names));
    expect([...read].filter((n) => !listed.has(n))).toEqual([]);
  });
});

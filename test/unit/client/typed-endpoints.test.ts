// The client's types follow the catalogue: `tsc` over a fixture of what a service writes, in
// which each line marked as an expected error (a misspelt endpoint, a misspelt parameter, a result
// field misused) must be one. The same fixture against a loosely typed client leaves every one of
// them unflagged, which is how this check fails when the types loosen.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/temporal/cli-binary.js';

const run = promisify(execFile);
const root = projectRoot();
const FIXTURE = join(root, 'test', 'unit', 'client', 'fixtures', 'typed-endpoints.ts');
const IMPORT = "import type { PcdsClient, PersonProfile } from '../../../../src/index.js';";

/** tsc with the project's options over one file; its exit code and diagnostics. */
async function tsc(file: string): Promise<{ code: number; errors: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-typed-'));
  const config = join(dir, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: { noEmit: true, typeRoots: [join(root, 'node_modules', '@types')] },
      include: [],
      files: [file],
    }),
  );
  const tscBin = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await run(process.execPath, [tscBin, '-p', config, '--pretty', 'false'], {
      maxBuffer: 16 << 20,
    });
    return { code: 0, errors: [] };
  } catch (err) {
    const e = err as { code?: number; stdout?: string };
    const errors = (e.stdout ?? '').split('\n').filter((l) => / error TS\d+:/.test(l));
    return { code: e.code ?? 1, errors };
  }
}

const fixture = readFileSync(FIXTURE, 'utf8');
const directives = fixture.split('\n').filter((l) => l.trim().startsWith('// @ts-expect-error'));

describe('typed endpoints', () => {
  it('the fixture compiles: what a service may write does, and each mistake is an error', async () => {
    expect(fixture).toContain(IMPORT);
    expect(directives.length).toBeGreaterThanOrEqual(15);
    const r = await tsc(FIXTURE);
    expect(r.errors).toEqual([]);
    expect(r.code).toBe(0);
  }, 300_000);

  it('against a loosely typed client (any name, any parameters, any result) every mistake goes unflagged: the check fails', async () => {
    const loose = fixture.replace(
      IMPORT,
      [
        'type PersonProfile = any;',
        'interface PcdsClient {',
        '  call(endpoint: string, params: Record<string, unknown>): Promise<any>;',
        '  startCall(endpoint: string, params: Record<string, unknown>): Promise<{ result(): Promise<any> }>;',
        '  startBatch(request: Record<string, unknown>): Promise<{ results(query?: unknown): AsyncIterable<any> }>;',
        '  planBatch(request: Record<string, unknown>, limits: unknown): Promise<unknown>;',
        '}',
      ].join('\n'),
    );
    const dir = mkdtempSync(join(tmpdir(), 'pcds-typed-loose-'));
    const file = join(dir, 'loose.ts');
    writeFileSync(file, loose);
    const r = await tsc(file);
    expect(r.code).not.toBe(0);
    expect(r.errors).toHaveLength(directives.length);
    for (const e of r.errors)
      expect(e).toMatch(/error TS2578: Unused '@ts-expect-error' directive/);
  }, 120_000);
});

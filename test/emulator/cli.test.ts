import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { inspectInput } from '../../src/batch-io/row-reader.js';
import { emulatorOptionsFromFlags, registerEmulatorCommand } from '../../src/cli/emulator.js';
import { EmulatorOptionsError, parseEmulatorOptions } from '../../src/emulator/index.js';
import { datasetFor } from '../../src/emulator/dataset/dataset.js';

describe('CLI and options', () => {
  it('rule: `pcds emulator sample` writes known, unknown and malformed enrichment inputs from the seeded dataset', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pcds-sample-'));
    const out = join(dir, 'leads.csv');
    const program = new Command('pcds').exitOverride();
    registerEmulatorCommand(program);
    await program.parseAsync([
      'node',
      'pcds',
      'emulator',
      'sample',
      '--rows',
      '100',
      '--output',
      out,
      '--unknown-share',
      '0.1',
      '--bad-share',
      '0.04',
    ]);
    const lines = (await readFile(out, 'utf8')).trim().split('\n');
    expect(lines[0]).toBe('email');
    const rows = lines.slice(1);
    expect(rows).toHaveLength(100);
    const d = datasetFor(42, { people: 5000, companies: 600 });
    const known = rows.filter((e) => d.findPerson({ email: e }));
    const malformed = rows.filter((e) => !/^[^@\s]+@[^@\s]+\.[a-z]+$/.test(e));
    expect(known).toHaveLength(86);
    expect(malformed).toHaveLength(4);
    // "No identity" rows are rows of an empty cell, never blank lines the batch would skip.
    expect(malformed.filter((e) => e === '""')).toHaveLength(2);
    const inspection = await inspectInput({ path: out, format: 'csv' }, 'person_enrichment');
    expect(inspection).toMatchObject({ total: 100, blankLines: 0 });
    // Deterministic: the same options give the same file.
    await program.parseAsync([
      'node',
      'pcds',
      'emulator',
      'sample',
      '--rows',
      '100',
      '--output',
      out + '2',
      '--unknown-share',
      '0.1',
      '--bad-share',
      '0.04',
    ]);
    expect(await readFile(out + '2', 'utf8')).toBe(await readFile(out, 'utf8'));
  });

  it('rule: options are zod-validated and loadable from a JSON file (--config), flags overriding the file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pcds-config-'));
    const file = join(dir, 'emulator.json');
    await writeFile(
      file,
      JSON.stringify({
        port: 9999,
        timeScale: 2,
        limits: { perMinute: 10 },
        faults: { unavailableShare: 0.1 },
      }),
    );
    const opts = parseEmulatorOptions(
      await emulatorOptionsFromFlags({ config: file, port: 0, limits: false }),
    );
    expect(opts).toMatchObject({
      port: 0,
      timeScale: 2,
      limits: { enabled: false, perMinute: 10, perHour: 1000 },
      faults: { unavailableShare: 0.1 },
    });
    await writeFile(file, JSON.stringify({ timeScale: -1, colour: 'blue' }));
    await expect(emulatorOptionsFromFlags({ config: file })).rejects.toThrow(EmulatorOptionsError);
    await expect(emulatorOptionsFromFlags({ config: file })).rejects.toThrow(
      /timeScale.*colour is not an option|colour is not an option.*timeScale/,
    );
  });
});

// The chunk reader: CSV quoting, byte offsets that resume exactly, --map, and bad rows.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ColumnError, parseColumnMap, planColumns } from '../../../src/batch/columns.js';
import { inspectInput, readRows } from '../../../src/batch/row-reader.js';
import { isInvalidRow, type InputRow, type InputSource } from '../../../src/batch/types.js';
import { getEndpoint } from '../../../src/contract/index.js';

const dir = mkdtempSync(join(tmpdir(), 'pcds-reader-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

async function readAll(source: InputSource, chunk: number): Promise<InputRow[]> {
  const info = await inspectInput(source, 'person_enrichment');
  let cursor = { row: 1, byteOffset: info.dataOffset, done: false };
  const rows: InputRow[] = [];
  while (!cursor.done) {
    const r = await readRows({
      source,
      endpoint: 'person_enrichment',
      header: info.header,
      from: cursor,
      count: chunk,
    });
    rows.push(...r.rows);
    cursor = r.next;
  }
  return rows;
}

const CSV =
  '\uFEFFemail,name,company\r\n' +
  'ann@example.com,"Lee, Ann","Acme\nWest"\r\n' +
  '\r\n' +
  'not-an-email,Bob,Bcorp\r\n' +
  ',,\r\n' +
  'zoe@example.com,"Zoë ""Z"" Ö",Zed\r\n' +
  'extra@example.com,Eve,E,surplus\r\n' +
  'last@example.com,Last,L';

describe('CSV chunks', () => {
  it('reads quoted fields with commas and newlines, skips blank lines, and reports bad rows', async () => {
    const source: InputSource = { path: file('a.csv', CSV), format: 'csv' };
    const info = await inspectInput(source, 'person_enrichment');
    expect(info.total).toBe(6);
    expect(info.header).toEqual(['email', 'name', 'company']);
    const rows = await readAll(source, 100);
    expect(rows.map((r) => r.row)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(rows[0]).toMatchObject({
      params: { email: 'ann@example.com', name: 'Lee, Ann', company: 'Acme\nWest' },
    });
    expect(isInvalidRow(rows[1]) && rows[1].problem).toBe('email must be an email address');
    // The problem names the field, never the value.
    expect(JSON.stringify(isInvalidRow(rows[1]) && rows[1].problem)).not.toContain('not-an-email');
    expect(isInvalidRow(rows[2]) && rows[2].problem).toMatch(/needs at least one of/);
    expect(rows[3]).toMatchObject({ params: { email: 'zoe@example.com', name: 'Zoë "Z" Ö' } });
    expect(isInvalidRow(rows[4]) && rows[4].problem).toBe('has 4 fields where the header has 3');
    expect(rows[5]).toMatchObject({ row: 6, params: { email: 'last@example.com' } });
  });

  it('gives the same rows whatever the chunk size, resuming at byte offsets', async () => {
    const source: InputSource = { path: file('b.csv', CSV), format: 'csv' };
    const whole = await readAll(source, 100);
    for (const size of [1, 2, 4]) expect(await readAll(source, size)).toEqual(whole);
    // Each row's own offset restarts reading at exactly that row.
    const info = await inspectInput(source, 'person_enrichment');
    const fourth = whole[3];
    const again = await readRows({
      source,
      endpoint: 'person_enrichment',
      header: info.header,
      from: { row: fourth.row, byteOffset: fourth.offset, done: false },
      count: 1,
    });
    expect(again.rows[0]).toEqual(fourth);
  });

  it('maps columns with --map and types cells by their parameter', async () => {
    const path = file(
      'c.csv',
      'Email Address,Full Name,lite_enrich,required_fields\na@b.co,Al,true,"[""headline""]"\nb@b.co,Bo,maybe,\n',
    );
    const source: InputSource = {
      path,
      format: 'csv',
      columnMap: parseColumnMap('email=Email Address, name=Full Name'),
    };
    const rows = await readAll(source, 10);
    expect(rows[0]).toMatchObject({
      params: { email: 'a@b.co', name: 'Al', lite_enrich: true, required_fields: ['headline'] },
    });
    expect(rows[0].key).toEqual({ email: 'a@b.co', name: 'Al' });
    expect(isInvalidRow(rows[1]) && rows[1].problem).toBe('lite_enrich must be true or false');
  });

  it('refuses an unknown column before reading any row, naming it and the way out', async () => {
    const source: InputSource = {
      path: file('d.csv', 'email,shoe_size\na@b.co,9\n'),
      format: 'csv',
    };
    await expect(inspectInput(source, 'person_enrichment')).rejects.toThrow(
      /"shoe_size" is not a parameter of person_enrichment.*--map.*--ignore/,
    );
    const ignored = await readAll({ ...source, ignoreColumns: ['shoe_size'] }, 10);
    expect(ignored[0]).toMatchObject({ params: { email: 'a@b.co' } });
    expect(() =>
      planColumns(getEndpoint('person_enrichment'), ['mail'], parseColumnMap('email=Mail')),
    ).toThrow(ColumnError);
    expect(() => parseColumnMap('email')).toThrow(/parameter=column/);
  });

  it('reports a file that is not CSV', async () => {
    const source: InputSource = {
      path: file('e.csv', 'email,name\n"a@b.co,unclosed\n'),
      format: 'csv',
    };
    await expect(inspectInput(source, 'person_enrichment')).rejects.toThrow(/not valid CSV/);
  });
});

describe('JSONL chunks', () => {
  it('reads objects, keeps going past bad lines, and resumes at offsets', async () => {
    const text = [
      '{"email":"a@b.co","name":"A"}',
      '',
      'not json',
      '{"Mail":"c@d.co","lookup_mode":"fast"}\r',
      '{"phone":12}',
      '[1,2]',
      '{"email":"é@x.co"}',
    ].join('\n');
    const source: InputSource = {
      path: file('a.jsonl', text),
      format: 'jsonl',
      columnMap: { email: 'Mail' },
    };
    const info = await inspectInput(source, 'person_enrichment');
    expect(info.total).toBe(6);
    const rows = await readAll(source, 100);
    expect(rows.map((r) => [r.row, isInvalidRow(r) ? r.problem : 'ok'])).toEqual([
      [1, 'ok'],
      [2, 'line is not a JSON object'],
      [3, 'ok'],
      [4, expect.stringMatching(/^phone /)],
      [5, 'line is not a JSON object'],
      [6, 'email must be an email address'],
    ]);
    expect(rows[2]).toMatchObject({ params: { email: 'c@d.co', lookup_mode: 'fast' } });
    for (const size of [1, 3]) expect(await readAll(source, size)).toEqual(rows);
  });
});

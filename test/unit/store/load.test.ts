// Loading a batch's rows into the embedded store: a file gives exactly the rows, problems and
// codes the batch reader gives for it, bad files fail with a stable code and create no batch,
// rows from code are judged as JSONL objects, and memory stays bounded whatever the file's size.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { inspectInput, readRows } from '../../../src/batch-io/row-reader.js';
import { isInvalidRow, type InputRow, type InputSource } from '../../../src/batch/types.js';
import {
  BatchStore,
  loadFileIntoStore,
  LoadError,
  loadRowsIntoStore,
  type LoadedRow,
} from '../../../src/store/index.js';
import { tempStore } from './temp-store.js';

const ENDPOINT = 'person_enrichment';
const dir = mkdtempSync(join(tmpdir(), 'pcds-load-'));
const file = (name: string, text: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

async function newStore(): Promise<BatchStore> {
  const at = mkdtempSync(join(tmpdir(), 'pcds-load-store-'));
  const store = await tempStore(at);
  return new BatchStore(store);
}

/** A row as both readers give it: its number, and its parameters or its problem and code. */
const shape = (r: InputRow) =>
  isInvalidRow(r)
    ? { row: r.row, problem: r.problem, code: r.code ?? 'invalid_row', key: r.key }
    : { row: r.row, params: r.params, key: r.key };

/** Today's reading of a file: inspectInput, then readRows chunk by chunk from its cursor. */
async function readerRows(source: InputSource, maxRowBytes?: number) {
  const info = await inspectInput(source, ENDPOINT, maxRowBytes);
  let cursor = { row: 1, byteOffset: info.dataOffset, done: false };
  const rows: InputRow[] = [];
  while (!cursor.done) {
    const got = await readRows({
      source,
      endpoint: ENDPOINT,
      header: info.header,
      from: cursor,
      count: 3,
      ...(maxRowBytes !== undefined ? { maxRowBytes } : {}),
    });
    rows.push(...got.rows);
    cursor = got.next;
  }
  return { info, rows: rows.map(shape) };
}

async function storedRows(store: BatchStore, batchId: string) {
  return (await store.readRows(batchId, 1, 1_000_000)).rows.map(shape);
}

/** Loads the file and checks it against today's reader, row for row. */
async function expectLoadMatchesReader(source: InputSource, maxRowBytes?: number) {
  const store = await newStore();
  const expected = await readerRows(source, maxRowBytes);
  const loaded = await loadFileIntoStore(store, {
    batchId: 'b1',
    endpoint: ENDPOINT,
    source,
    ...(maxRowBytes !== undefined ? { maxRowBytes } : {}),
    dedupe: false,
  });
  expect(await storedRows(store, 'b1')).toEqual(expected.rows);
  expect(loaded).toMatchObject({
    rows: expected.info.total,
    blankLines: expected.info.blankLines,
    invalid: expected.rows.filter((r) => 'problem' in r).length,
    duplicates: 0,
    record: { state: 'loaded', total: expected.info.total },
  });
  return { store, loaded, expected };
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

const STRAY =
  'email,name\n' +
  'a@b.co,O"Neil\n' +
  '"c@d.co,Unclosed\n' +
  'e@f.co,Eve\n' +
  '"g@h.co"x,Gus\n' +
  'i@j.co,"Multi\nLine"\n' +
  '"m@n.co,Ann\n' +
  'o@p.co,"Bob"\n' +
  '"q@r.co,Quinn\n' +
  's@t.co,Sam"\n' +
  'k@l.co,Kay';

describe('loading a file', () => {
  it('gives a CSV the rows, problems, codes and counts of the batch reader, with its cells', async () => {
    const { store, loaded } = await expectLoadMatchesReader({
      path: file('a.csv', CSV),
      format: 'csv',
    });
    expect(loaded).toMatchObject({ rows: 6, invalid: 3, blankLines: 1 });
    // The export's columns: the header, and each row's own fields.
    expect(loaded.record.columns).toEqual(['email', 'name', 'company']);
    const cells = await store.inputRows('b1', 0, 10);
    expect(cells[0]).toMatchObject({
      row: 1,
      cells: ['ann@example.com', 'Lee, Ann', 'Acme\nWest'],
    });
    expect(cells[4]).toMatchObject({ row: 5, cells: ['extra@example.com', 'Eve', 'E', 'surplus'] });
  });

  it('fails only the rows of stray quotes or a byte-order mark, and reads what is not UTF-8, as the reader does', async () => {
    await expectLoadMatchesReader({ path: file('stray.csv', STRAY), format: 'csv' });
    const bom = '\uFEFF';
    await expectLoadMatchesReader({
      path: file('bom.csv', `${bom}email,name\na@b.co,Al\n${bom}c@d.co,Cy\ne@f.co,E${bom}ve\n`),
      format: 'csv',
    });
    const latin1 = Buffer.concat([
      Buffer.from('email,name\nok@b.co,Ok\nbad@b.co,Ren'),
      Buffer.from([0xe9, 0x65]),
      Buffer.from('\nzz@b.co,Zo\xeb\n'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('@b.co,X\n'),
    ]);
    const { store } = await expectLoadMatchesReader({
      path: file('latin1.csv', latin1),
      format: 'csv',
    });
    const rows = await storedRows(store, 'b1');
    expect(rows.map((r) => r.code ?? 'ok')).toEqual(['ok', 'ok', 'ok', 'invalid_row']);
    const strict = await expectLoadMatchesReader({
      path: file('latin1-strict.csv', latin1),
      format: 'csv',
      encoding: 'utf-8',
    });
    const strictRows = await storedRows(strict.store, 'b1');
    expect(strictRows.map((r) => r.code ?? 'ok')).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(JSON.stringify(strictRows)).not.toMatch(/Ren|\uFFFD/);
  });

  it('counts blank lines (before the header too), fails oversized rows as row_too_large without their cells', async () => {
    const blank = await expectLoadMatchesReader({
      path: file('blank.csv', '\nemail,name\n\na@b.co,A\n   \n\r\n\t\n,\nb@b.co,B\n\n'),
      format: 'csv',
    });
    expect(blank.loaded).toMatchObject({ blankLines: 6, record: { columns: ['email', 'name'] } });
    const huge = `email,name\na@b.co,A\nhuge@b.co,${'x'.repeat(200_000)}\nw@b.co,${'y'.repeat(500)}\nb@b.co,B\n`;
    const source: InputSource = { path: file('huge.csv', huge), format: 'csv' };
    await expectLoadMatchesReader(source);
    const { store } = await expectLoadMatchesReader(source, 100);
    const rows = await storedRows(store, 'b1');
    expect(rows.map((r) => r.code ?? 'ok')).toEqual(['ok', 'row_too_large', 'row_too_large', 'ok']);
    // An oversized row keeps nothing of what it held.
    const cells = await store.inputRows('b1', 0, 10);
    expect(cells[1]).toEqual({ row: 2, key: {} });
    expect(cells[2]).toEqual({ row: 3, key: {} });
    // Parameters over the limit once escaped.
    await expectLoadMatchesReader(
      {
        path: file('escaped.csv', `email,name\na@b.co,${'\u0001'.repeat(50)}\nb@b.co,B\n`),
        format: 'csv',
      },
      100,
    );
  });

  it('maps columns with --map and leaves out --ignore columns', async () => {
    const mapped = await expectLoadMatchesReader({
      path: file(
        'map.csv',
        'Email Address,Full Name,lite_enrich,shoe_size\na@b.co,Al,true,9\nb@b.co,Bo,maybe,10\n',
      ),
      format: 'csv',
      columnMap: { email: 'Email Address', name: 'Full Name' },
      ignoreColumns: ['shoe_size'],
    });
    const rows = await storedRows(mapped.store, 'b1');
    expect(rows[0]).toEqual({
      row: 1,
      params: { email: 'a@b.co', name: 'Al', lite_enrich: true },
      key: { email: 'a@b.co', name: 'Al' },
    });
    expect(rows[1]).toMatchObject({ problem: 'lite_enrich must be true or false' });
    expect(mapped.loaded.record.columns).toEqual([
      'Email Address',
      'Full Name',
      'lite_enrich',
      'shoe_size',
    ]);
    await expectLoadMatchesReader({
      path: file('map.jsonl', '{"Mail":"c@d.co","x":1}\n{"Mail":"bad","x":2}\n'),
      format: 'jsonl',
      columnMap: { email: 'Mail' },
      ignoreColumns: ['x'],
    });
  });

  it('gives a JSONL the reader rows, its objects as cells and its keys in first-seen order as columns', async () => {
    const text = [
      '{"email":"a@b.co","name":"A"}',
      '',
      'not json',
      '{"email":"c@d.co","lookup_mode":"fast"}\r',
      '{"phone":12}',
      '[1,2]',
      '{"email":"é@x.co"}',
      '{"email":"d@b.co","jane.doe@secret.com":1}',
      '{"email":"e@b.co","callback_url":"https://listener.example.com/hook"}',
    ].join('\n');
    const { store, loaded } = await expectLoadMatchesReader({
      path: file('a.jsonl', text),
      format: 'jsonl',
    });
    expect(loaded.record.columns).toEqual([
      'email',
      'name',
      'lookup_mode',
      'phone',
      'jane.doe@secret.com',
      'callback_url',
    ]);
    const cells = await store.inputRows('b1', 0, 10);
    expect(cells[0].cells).toEqual({ email: 'a@b.co', name: 'A' });
    expect(cells[1].cells).toBeUndefined();
    const broken = Buffer.concat([
      Buffer.from('\uFEFF{"email":"a@b.co"}\n\n'),
      Buffer.from('\uFEFF{"email":"bom@b.co"}\n'),
      Buffer.from('{"email":"bad@b.co","name":"R'),
      Buffer.from([0xe9]),
      Buffer.from('"}\n  \n'),
      Buffer.from(`{"email":"big@b.co","name":"${'z'.repeat(200_000)}"}\n`),
      Buffer.from('{"email":"c@b.co"}'),
    ]);
    await expectLoadMatchesReader({ path: file('broken.jsonl', broken), format: 'jsonl' });
  });

  it('marks duplicate rows with dedupe, and counts them', async () => {
    const path = file(
      'dupes.csv',
      'email\nada@example.org\ngrace@example.org\nADA@Example.org\nnot-an-email\nada@example.org\n',
    );
    const store = await newStore();
    const loaded = await loadFileIntoStore(store, {
      batchId: 'd1',
      endpoint: ENDPOINT,
      source: { path, format: 'csv' },
      dedupe: true,
    });
    expect(loaded).toMatchObject({ rows: 5, invalid: 1, duplicates: 2 });
    const { rows } = await store.readRows('d1', 1, 10);
    expect(rows.map((r) => ('duplicateOf' in r ? r.duplicateOf : undefined))).toEqual([
      undefined,
      undefined,
      1,
      undefined,
      1,
    ]);
    const plain = await loadFileIntoStore(store, {
      batchId: 'd2',
      endpoint: ENDPOINT,
      source: { path, format: 'csv' },
      dedupe: false,
    });
    expect(plain.duplicates).toBe(0);
  });

  it('reports progress in bytes of the file', async () => {
    const lines = Array.from({ length: 2500 }, (_, i) => `p${i}@example.org`);
    const path = file('progress.csv', `email\n${lines.join('\n')}\n`);
    const seen: { rows: number; bytes: number; totalBytes: number }[] = [];
    await loadFileIntoStore(await newStore(), {
      batchId: 'p1',
      endpoint: ENDPOINT,
      source: { path, format: 'csv' },
      dedupe: false,
      onProgress: (p) => seen.push(p),
    });
    const size = Buffer.byteLength(`email\n${lines.join('\n')}\n`);
    expect(seen.map((p) => p.rows)).toEqual([1000, 2000, 2500]);
    expect(seen.every((p) => p.totalBytes === size)).toBe(true);
    expect(seen.at(-1)!.bytes).toBe(size);
    expect(seen[0].bytes).toBeGreaterThan(0);
    expect(seen[0].bytes).toBeLessThan(seen[1].bytes);
  });
});

describe('a file that cannot be loaded', () => {
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => new Error('accepted'),
      (e: unknown) => e as Error & { code?: string },
    );

  it('fails a bad header with invalid_input_file, quoting no cell, and creates no batch', async () => {
    const store = await newStore();
    const secret = 'wJalrXUtnFEMI/K7MDENG';
    const err = await failure(
      loadFileIntoStore(store, {
        batchId: 'x1',
        endpoint: ENDPOINT,
        source: { path: file('unknown.csv', `email,${secret}\na@b.co,1\n`), format: 'csv' },
        dedupe: true,
      }),
    );
    expect(err).toBeInstanceOf(LoadError);
    expect(err).toMatchObject({ code: 'invalid_input_file' });
    expect(err.message).toMatch(/^column 2 is not a parameter of person_enrichment/);
    expect(err.message).not.toContain(secret);
    expect(await store.record('x1')).toBeUndefined();

    const empty = await failure(
      loadFileIntoStore(store, {
        batchId: 'x2',
        endpoint: ENDPOINT,
        source: { path: file('empty.csv', '\n\n'), format: 'csv' },
        name: 'empty.csv',
        dedupe: true,
      }),
    );
    expect(empty).toMatchObject({
      code: 'invalid_input_file',
      message: 'empty.csv: the file is empty (a CSV needs a header row)',
    });
    const noHeader = await failure(
      loadFileIntoStore(store, {
        batchId: 'x3',
        endpoint: ENDPOINT,
        source: { path: file('no-header.csv', 'ada@example.com,Ada\n'), format: 'csv' },
        dedupe: true,
      }),
    );
    expect(noHeader).toMatchObject({ code: 'invalid_input_file' });
    expect(noHeader.message).not.toMatch(/ada|Ada/);
  });

  it('fails a missing file with input_not_readable', async () => {
    const store = await newStore();
    const err = await failure(
      loadFileIntoStore(store, {
        batchId: 'x4',
        endpoint: ENDPOINT,
        source: { path: join(dir, 'absent.csv'), format: 'csv' },
        name: 'absent.csv',
        dedupe: true,
      }),
    );
    expect(err).toMatchObject({ code: 'input_not_readable', message: 'absent.csv: no such file' });
    const isDir = await failure(
      loadFileIntoStore(store, {
        batchId: 'x5',
        endpoint: ENDPOINT,
        source: { path: dir, format: 'jsonl' },
        name: 'folder',
        dedupe: true,
      }),
    );
    expect(isDir).toMatchObject({ code: 'input_not_readable', message: 'folder: is a directory' });
    expect(await store.record('x5')).toBeUndefined();
  });

  it('drops what it loaded when a JSONL first object fails after earlier lines', async () => {
    const store = await newStore();
    const err = await failure(
      loadFileIntoStore(store, {
        batchId: 'x6',
        endpoint: ENDPOINT,
        source: {
          path: file('late.jsonl', 'not json\n{"email":"a@b.co","shoe":1}\n'),
          format: 'jsonl',
        },
        dedupe: true,
      }),
    );
    expect(err).toMatchObject({ code: 'invalid_input_file' });
    expect(err.message).toMatch(/^key 2 is not a parameter/);
    expect(await store.record('x6')).toBeUndefined();
    expect(await store.inputRows('x6', 0, 10)).toEqual([]);
  });

  it('refuses a batch id whose rows are loaded (batch_exists), leaving them as they are', async () => {
    const store = await newStore();
    const source: InputSource = {
      path: file('once.csv', 'email\na@b.co\nb@b.co\n'),
      format: 'csv',
    };
    await loadFileIntoStore(store, { batchId: 'e1', endpoint: ENDPOINT, source, dedupe: true });
    const err = await failure(
      loadFileIntoStore(store, {
        batchId: 'e1',
        endpoint: ENDPOINT,
        source: { path: file('other.csv', 'email\nc@b.co\n'), format: 'csv' },
        dedupe: true,
      }),
    );
    expect(err).toMatchObject({ code: 'batch_exists' });
    expect(await store.loadedRecord('e1')).toMatchObject({ total: 2 });
    expect((await storedRows(store, 'e1')).map((r) => r.params)).toEqual([
      { email: 'a@b.co' },
      { email: 'b@b.co' },
    ]);
  });

  it('reloads a batch whose loader stopped half way from nothing', async () => {
    const store = await newStore();
    // A loader that died: rows 1..3 of another file, never finished.
    await store.beginLoad('r1', ENDPOINT, ['email']);
    await store.addRows('r1', ENDPOINT, [
      { row: 1, params: { email: 'old1@b.co' }, key: { email: 'old1@b.co' } },
      { row: 2, params: { email: 'old2@b.co' }, key: { email: 'old2@b.co' } },
      { row: 3, params: { email: 'old3@b.co' }, key: { email: 'old3@b.co' } },
    ]);
    const source: InputSource = {
      path: file('new.csv', 'email\nnew1@b.co\nnew2@b.co\n'),
      format: 'csv',
    };
    const loaded = await loadFileIntoStore(store, {
      batchId: 'r1',
      endpoint: ENDPOINT,
      source,
      dedupe: true,
    });
    expect(loaded).toMatchObject({ rows: 2, record: { state: 'loaded', total: 2 } });
    expect(await storedRows(store, 'r1')).toEqual((await readerRows(source)).rows);
  });

  it('drops the rows of a load that is stopped, and loads again after', async () => {
    const store = await newStore();
    const lines = Array.from({ length: 3000 }, (_, i) => `p${i}@example.org`);
    const source: InputSource = {
      path: file('stop.csv', `email\n${lines.join('\n')}\n`),
      format: 'csv',
    };
    const stop = new AbortController();
    const err = await failure(
      loadFileIntoStore(store, {
        batchId: 's1',
        endpoint: ENDPOINT,
        source,
        dedupe: true,
        signal: stop.signal,
        onProgress: () => stop.abort(),
      }),
    );
    expect(err.name).toBe('AbortError');
    expect(await store.record('s1')).toBeUndefined();
    const again = await loadFileIntoStore(store, {
      batchId: 's1',
      endpoint: ENDPOINT,
      source,
      dedupe: true,
    });
    expect(again.rows).toBe(3000);
  });
});

describe('loading rows from code', () => {
  const objects: unknown[] = [
    { email: 'a@b.co', name: 'A' },
    { email: 'not-an-email' },
    { email: 'b@b.co', 'jane.doe@secret.com': 1 },
    { email: 'c@b.co', callback_url: 'https://listener.example.com/hook' },
    { email: 'big@b.co', name: 'z'.repeat(70_000) },
    [1, 2],
    { email: 'A@B.co', name: 'A' },
    {},
  ];
  const jsonlRows = async () => {
    const source: InputSource = {
      path: file('objects.jsonl', objects.map((o) => JSON.stringify(o)).join('\n')),
      format: 'jsonl',
    };
    return (await readerRows(source)).rows;
  };

  it('judges each object as the reader judges a JSONL line holding it', async () => {
    const store = await newStore();
    const loaded = await loadRowsIntoStore(store, {
      batchId: 'c1',
      endpoint: ENDPOINT,
      rows: objects as Record<string, unknown>[],
      dedupe: true,
    });
    const expected = (await jsonlRows()).map((r) =>
      // There is no line: an array is "not a JSON object" as a row.
      r.problem === 'line is not a JSON object' ? { ...r, problem: 'row is not a JSON object' } : r,
    );
    expect(await storedRows(store, 'c1')).toEqual(expected);
    expect(expected.map((r) => r.code ?? 'ok')).toEqual([
      'ok',
      'invalid_row',
      'invalid_row',
      'invalid_row',
      'row_too_large',
      'invalid_row',
      'ok',
      'invalid_row',
    ]);
    expect(loaded).toMatchObject({ rows: 8, invalid: 6, blankLines: 0, duplicates: 1 });
    expect(JSON.stringify(expected.filter((r) => r.problem))).not.toMatch(/secret|listener|zzzz/);
    expect(loaded.record.columns).toEqual(['email', 'name', 'jane.doe@secret.com', 'callback_url']);
    expect((await store.inputRows('c1', 0, 1))[0].cells).toEqual({ email: 'a@b.co', name: 'A' });
  });

  it('takes rows from an async generator, a chunk at a time', async () => {
    const store = await newStore();
    const chunks: number[] = [];
    const watched = Object.create(store) as BatchStore;
    watched.addRows = (batchId: string, endpoint: string, rows: readonly LoadedRow[]) => {
      chunks.push(rows.length);
      return store.addRows(batchId, endpoint, rows);
    };
    async function* generated() {
      for (let i = 0; i < 2500; i++) yield { email: `p${i % 2000}@example.org` };
    }
    const loaded = await loadRowsIntoStore(watched, {
      batchId: 'g1',
      endpoint: ENDPOINT,
      rows: generated(),
      dedupe: true,
    });
    expect(loaded).toMatchObject({ rows: 2500, invalid: 0, duplicates: 500 });
    expect(chunks).toEqual([1000, 1000, 500]);
    await expect(
      loadRowsIntoStore(store, { batchId: 'g1', endpoint: ENDPOINT, rows: [], dedupe: true }),
    ).rejects.toMatchObject({ code: 'batch_exists' });
  });
});

describe('a large file', () => {
  it('loads 200,000 rows in bounded chunks, the heap growing far less than the file', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const rows = 200_000;
    const path = join(dir, 'large.csv');
    const body: string[] = ['email,name,company'];
    for (let i = 0; i < rows; i++)
      body.push(`person.${i}@example.org,Person Number ${i},Company ${i % 977} Incorporated`);
    writeFileSync(path, `${body.join('\n')}\n`);
    const size = Buffer.byteLength(`${body.join('\n')}\n`);
    body.length = 0;

    const store = await newStore();
    let largestChunk = 0;
    const watched = Object.create(store) as BatchStore;
    watched.addRows = (batchId: string, endpoint: string, chunk: readonly LoadedRow[]) => {
      largestChunk = Math.max(largestChunk, chunk.length);
      return store.addRows(batchId, endpoint, chunk);
    };
    gc();
    const before = process.memoryUsage().heapUsed;
    let peak = 0;
    let calls = 0;
    const loaded = await loadFileIntoStore(watched, {
      batchId: 'big',
      endpoint: ENDPOINT,
      source: { path, format: 'csv' },
      dedupe: true,
      onProgress: () => {
        if (++calls % 20 !== 0) return;
        gc();
        peak = Math.max(peak, process.memoryUsage().heapUsed - before);
      },
    });
    expect(loaded).toMatchObject({ rows, invalid: 0, duplicates: 0 });
    expect(largestChunk).toBe(1000);
    expect(calls).toBeGreaterThan(200);
    // What the load holds at once is a chunk, not the file (about 13 MB here).
    expect(size).toBeGreaterThan(12_000_000);
    expect(peak).toBeLessThan(size / 4);
  }, 300_000);
});

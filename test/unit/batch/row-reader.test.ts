// The chunk reader: CSV quoting, byte offsets that resume exactly, --map, and bad rows; broken
// files (stray quotes, byte-order marks, blank lines, huge lines) fail only their rows, with
// reasons that never quote a value, in chunks capped in bytes; lines that are not UTF-8 are read
// as Windows-1252 unless the file's encoding is named.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ColumnError, parseColumnMap, planColumns } from '../../../src/batch/columns.js';
import { inspectInput, readRows } from '../../../src/batch-io/row-reader.js';
import { isInvalidRow, type InputRow, type InputSource } from '../../../src/batch/types.js';
import { getEndpoint } from '../../../src/contract/index.js';

const dir = mkdtempSync(join(tmpdir(), 'pcds-reader-'));
const file = (name: string, text: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

async function readChunks(
  source: InputSource,
  chunk: number,
  limits: { maxRowBytes?: number; maxBytes?: number } = {},
): Promise<InputRow[][]> {
  const info = await inspectInput(source, 'person_enrichment', limits.maxRowBytes);
  let cursor = { row: 1, byteOffset: info.dataOffset, done: false };
  const chunks: InputRow[][] = [];
  while (!cursor.done) {
    const r = await readRows({
      source,
      endpoint: 'person_enrichment',
      header: info.header,
      from: cursor,
      count: chunk,
      ...limits,
    });
    chunks.push(r.rows);
    cursor = r.next;
  }
  return chunks;
}

async function readAll(
  source: InputSource,
  chunk: number,
  limits: { maxRowBytes?: number; maxBytes?: number } = {},
): Promise<InputRow[]> {
  return (await readChunks(source, chunk, limits)).flat();
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
      /^column 2 is not a parameter of person_enrichment \(its parameters: .*\); map it with --map parameter=column or drop it with --ignore$/,
    );
    const ignored = await readAll({ ...source, ignoreColumns: ['shoe_size'] }, 10);
    expect(ignored[0]).toMatchObject({ params: { email: 'a@b.co' } });
    expect(() =>
      planColumns(getEndpoint('person_enrichment'), ['mail'], parseColumnMap('email=Mail')),
    ).toThrow(ColumnError);
    expect(() => parseColumnMap('email')).toThrow(/parameter=column/);
  });

  it('never echoes a person value when a file without a header row has its first row taken for one', async () => {
    const source: InputSource = {
      path: file('no-header.csv', 'ada.lovelace@example.com,+44 20 7946 0958,Ada\nb@c.co,1,B\n'),
      format: 'csv',
    };
    const err: Error = await inspectInput(source, 'person_enrichment').then(
      () => new Error('accepted'),
      (e: Error) => e,
    );
    expect(err.message).toMatch(
      /the first line holds values, not column names \(column 1 looks like an email.*add a header row/,
    );
    for (const cell of ['ada.lovelace', '7946', 'Ada']) expect(err.message).not.toContain(cell);
  });

  it('names unknown, doubled and callback_url header cells by position, never quoting a cell (they are file content)', async () => {
    const cells = ['AKIAIOSFODNN7EXAMPLE', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'];
    const source: InputSource = {
      path: file('secrets.csv', `email,${cells[0]},name,${cells[1]}\na@b.co,1,Al,2\n`),
      format: 'csv',
    };
    const err: Error = await inspectInput(source, 'person_enrichment').then(
      () => new Error('accepted'),
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(ColumnError);
    expect(err.message).toMatch(
      /^column 2 and column 4 are not parameters of person_enrichment \(its parameters: email, .*\); map them with --map parameter=column or drop them with --ignore$/,
    );
    for (const cell of cells) expect(err.message).not.toContain(cell);

    const twice = () =>
      planColumns(getEndpoint('person_enrichment'), ['email', 'T0pS3cret', 'name', 'T0pS3cret']);
    expect(twice).toThrow(/column 4 has the name of column 2 \(header cells must differ\)/);
    expect(twice).not.toThrow(/T0pS3cret/);
    expect(() => planColumns(getEndpoint('person_enrichment'), ['email', 'callback_url'])).toThrow(
      /^column 2 is callback_url: the callback is set by --webhooks, not by a column$/,
    );
    // JSONL: the first object's keys, by position too.
    const jsonl: InputSource = {
      path: file('secrets.jsonl', `{"email":"a@b.co","${cells[0]}":1}\n`),
      format: 'jsonl',
    };
    const keyErr: Error = await inspectInput(jsonl, 'person_enrichment').then(
      () => new Error('accepted'),
      (e: Error) => e,
    );
    expect(keyErr.message).toMatch(/^key 2 is not a parameter of person_enrichment/);
    expect(keyErr.message).not.toContain(cells[0]);
  });

  it('fails a later JSONL row with unknown keys by their count, never their text', async () => {
    const source: InputSource = {
      path: file(
        'later-keys.jsonl',
        '{"email":"a@b.co"}\n' +
          '{"email":"b@b.co","jane.doe@secret.com":1,"x":{"k":2}}\n' +
          '{"email":"c@b.co","query":"cto","j.roe@secret.com":1}\n',
      ),
      format: 'jsonl',
    };
    const rows = await readAll(source, 10);
    expect(rows.map(problemOf)).toEqual([
      'ok',
      ['invalid_row', '2 keys are not parameters of this endpoint'],
      [
        'invalid_row',
        'query is not a parameter of this endpoint; 1 other key is not a parameter of this endpoint',
      ],
    ]);
    expect(JSON.stringify(rows.map(problemOf))).not.toMatch(/secret|jane|roe/);
  });

  it('fails a later JSONL row that sets callback_url (only --webhooks sets the callback), and reads on', async () => {
    const source: InputSource = {
      path: file(
        'callback.jsonl',
        '{"email":"a@b.co"}\n' +
          '{"email":"b@b.co","callback_url":"https://listener.example.com/hook"}\n' +
          '{"email":"c@b.co","callback_url":""}\n',
      ),
      format: 'jsonl',
    };
    const rows = await readAll(source, 10);
    expect(rows.map(problemOf)).toEqual([
      'ok',
      ['invalid_row', 'callback_url is set by --webhooks, not by a row'],
      'ok',
    ]);
    expect(rows[1].key).toEqual({ email: 'b@b.co' });
    expect(JSON.stringify(rows)).not.toContain('listener.example.com');
  });

  it('fails a later row with a callback URL under another spelling or nested in a free-form value', async () => {
    const source: InputSource = {
      path: file(
        'callback-deep.jsonl',
        '{"company":"acme"}\n' +
          '{"company":"acme","callbackUrl":"https://listener.example.com/a"}\n' +
          '{"company":"acme","options":{"hooks":[{"Callback-URL":"https://listener.example.com/b"}]}}\n' +
          '{"company":"acme","options":{"callback":"no url"}}\n',
      ),
      format: 'jsonl',
    };
    const rows = await readRows({
      source,
      endpoint: 'company_intent',
      from: { row: 1, byteOffset: 0, done: false },
      count: 10,
    });
    expect(rows.rows.map(problemOf)).toEqual([
      'ok',
      ['invalid_row', 'callback_url is set by --webhooks, not by a row'],
      ['invalid_row', 'callback_url is set by --webhooks, not by a row'],
      'ok',
    ]);
    expect(JSON.stringify(rows.rows.map(problemOf))).not.toContain('listener.example.com');
    expect(() => planColumns(getEndpoint('company_intent'), ['company', 'CallbackURL'])).toThrow(
      /^column 2 is callback_url: the callback is set by --webhooks, not by a column$/,
    );
  });

  it('reports a header that is not CSV', async () => {
    const source: InputSource = {
      path: file('e.csv', 'email,"name\na@b.co,Ann\n'),
      format: 'csv',
    };
    await expect(inspectInput(source, 'person_enrichment')).rejects.toThrow(
      /header row cannot be read: field 2: a quoted field is not closed/,
    );
  });
});

const problemOf = (r: InputRow) => (isInvalidRow(r) ? [r.code ?? 'invalid_row', r.problem] : 'ok');

/** No bad row's problem, key or serialized form carries any of these cell values. */
function expectNoValues(rows: InputRow[], values: string[]) {
  for (const r of rows.filter(isInvalidRow)) {
    const text = JSON.stringify(r);
    for (const v of values) expect(text).not.toContain(v);
  }
}

describe('broken CSV', () => {
  it('fails only the row of a stray quote, naming the column, and reads on', async () => {
    const text =
      'email,name\n' +
      'a@b.co,O"Neil\n' + // 1: quote inside an unquoted field
      '"c@d.co,Unclosed\n' + // 2: quote never closed
      'e@f.co,Eve\n' + // 3
      '"g@h.co"x,Gus\n' + // 4: text after a closing quote
      'i@j.co,"Multi\nLine"\n' + // 5: a real quoted line break still reads
      '"m@n.co,Ann\n' + // 6: an open quote that a later line would close badly
      'o@p.co,"Bob"\n' + // 7
      '"q@r.co,Quinn\n' + // 8: closed on a later line, but as one field where the header has two
      's@t.co,Sam"\n' + // 9
      'k@l.co,Kay'; // 10
    const source: InputSource = { path: file('stray.csv', text), format: 'csv' };
    const info = await inspectInput(source, 'person_enrichment');
    expect(info.total).toBe(10);
    const rows = await readAll(source, 100);
    expect(rows.map((r) => [r.row, problemOf(r)])).toEqual([
      [1, ['invalid_row', expect.stringMatching(/^column "name": a quote inside a field/)]],
      [2, ['invalid_row', expect.stringMatching(/^column "email": a quoted field is not closed/)]],
      [3, 'ok'],
      [4, ['invalid_row', expect.stringMatching(/^column "email": text after the closing quote/)]],
      [5, 'ok'],
      [6, ['invalid_row', expect.stringMatching(/not closed/)]],
      [7, 'ok'],
      [8, ['invalid_row', expect.stringMatching(/not closed/)]],
      [9, ['invalid_row', expect.stringMatching(/a quote inside a field/)]],
      [10, 'ok'],
    ]);
    expect(rows[4]).toMatchObject({ params: { email: 'i@j.co', name: 'Multi\nLine' } });
    expect(rows[6]).toMatchObject({ params: { email: 'o@p.co', name: 'Bob' } });
    expectNoValues(rows, ['Neil', 'c@d.co', 'Unclosed', 'g@h.co', 'Gus', 'm@n.co', 'Ann', 'Quinn']);
    for (const size of [1, 3]) expect(await readAll(source, size)).toEqual(rows);
  });

  it('skips a byte-order mark at the start of the file, and fails a row that has one', async () => {
    const bom = '\uFEFF';
    const text = `${bom}email,name\na@b.co,Al\n${bom}c@d.co,Cy\ne@f.co,E${bom}ve\ng@h.co,Gil\n`;
    const source: InputSource = { path: file('bom.csv', text), format: 'csv' };
    const info = await inspectInput(source, 'person_enrichment');
    expect(info).toMatchObject({ total: 4, header: ['email', 'name'] });
    const rows = await readAll(source, 100);
    expect(rows.map(problemOf)).toEqual([
      'ok',
      ['invalid_row', expect.stringMatching(/^column "email" has a byte-order mark/)],
      ['invalid_row', expect.stringMatching(/^column "name" has a byte-order mark/)],
      'ok',
    ]);
    expectNoValues(rows, ['c@d.co', 'Cy', 'Eve', 'E\uFEFFve']);
  });

  it('reads a line that is not UTF-8 as Windows-1252 (a spreadsheet on Windows) and counts it', async () => {
    const bytes = Buffer.concat([
      Buffer.from('email,name\nok@b.co,Ok\nbad@b.co,Ren'),
      Buffer.from([0xe9, 0x65]), // Windows-1252 "é" then "e"
      Buffer.from('\nzz@b.co,Zo\xeb\n'), // valid UTF-8 "ë"
      Buffer.from([0xff, 0xfe]),
      Buffer.from('@b.co,X\n'),
    ]);
    const source: InputSource = { path: file('cp1252.csv', bytes), format: 'csv' };
    expect(await inspectInput(source, 'person_enrichment')).toMatchObject({
      total: 4,
      notUtf8Rows: 2,
    });
    const rows = await readAll(source, 100);
    expect(rows.map(problemOf)).toEqual([
      'ok',
      'ok',
      'ok',
      ['invalid_row', 'email must be an email address'],
    ]);
    expect(rows[1]).toMatchObject({ params: { email: 'bad@b.co', name: 'Renée' } });
    expect(rows[2]).toMatchObject({ params: { name: 'Zoë' } });
    for (const size of [1, 3]) expect(await readAll(source, size)).toEqual(rows);
  });

  it('with an encoding named, a value it cannot read is left out: the row goes on by the rest, and fails only when that is not enough', async () => {
    const bytes = Buffer.concat([
      Buffer.from('email,name\nok@b.co,Ok\nbad@b.co,Ren'),
      Buffer.from([0xe9, 0x65]),
      Buffer.from('\nnobody'),
      Buffer.from([0xe9]),
      Buffer.from('@b.co,\n'),
    ]);
    const utf8: InputSource = { path: file('strict.csv', bytes), format: 'csv', encoding: 'utf-8' };
    expect(await inspectInput(utf8, 'person_enrichment')).not.toHaveProperty('notUtf8Rows');
    const rows = await readAll(utf8, 100);
    expect(rows.map(problemOf)).toEqual([
      'ok',
      'ok',
      [
        'invalid_row',
        expect.stringMatching(
          /^email could not be read as utf-8 \(name the file's encoding with --encoding, or save it as UTF-8\); without it: needs at least one of/,
        ),
      ],
    ]);
    expect(rows[1]).toEqual(
      expect.objectContaining({ params: { email: 'bad@b.co' }, unreadable: ['name'] }),
    );
    expectNoValues(rows, ['Ren', '\uFFFD', 'nobody']);

    // Windows-1252 leaves five bytes undefined (0x81, 0x8d, 0x8f, 0x90, 0x9d).
    const cp1252 = Buffer.concat([
      Buffer.from('email,name\nok@b.co,Ren'),
      Buffer.from([0xe9, 0x65, 0x81]),
      Buffer.from('\n'),
    ]);
    const named: InputSource = {
      path: file('named.csv', cp1252),
      format: 'csv',
      encoding: 'windows-1252',
    };
    expect(await readAll(named, 100)).toEqual([
      expect.objectContaining({ params: { email: 'ok@b.co' }, unreadable: ['name'] }),
    ]);
    const latin9: InputSource = { ...named, encoding: 'iso-8859-15' };
    expect(await readAll(latin9, 100)).toEqual([
      expect.objectContaining({ params: { email: 'ok@b.co', name: 'Renée\u0081' } }),
    ]);
  });

  it('counts blank lines, which are not rows; a row of empty cells is a row', async () => {
    const text = '\nemail,name\n\na@b.co,A\n   \n\r\n\t\n,\nb@b.co,B\n\n';
    const source: InputSource = { path: file('blank.csv', text), format: 'csv' };
    const info = await inspectInput(source, 'person_enrichment');
    expect(info).toMatchObject({ total: 3, blankLines: 6 });
    const rows = await readAll(source, 100);
    expect(rows.map((r) => [r.row, problemOf(r)])).toEqual([
      [1, 'ok'],
      [2, ['invalid_row', expect.stringMatching(/needs at least one of/)]],
      [3, 'ok'],
    ]);
  });

  it('fails a line over the limit as row_too_large without carrying it', async () => {
    const huge = 'x'.repeat(3 * 1024 * 1024);
    const wide = `w@b.co,${'y'.repeat(500)}`;
    const text = `email,name\na@b.co,A\nhuge@b.co,${huge}\n${wide}\nb@b.co,B\n`;
    const source: InputSource = { path: file('huge.csv', text), format: 'csv' };
    // Default limit (64 KB): the 3 MB line fails, the 500-byte one reads.
    const rows = await readAll(source, 100);
    expect(rows.map(problemOf)).toEqual([
      'ok',
      [
        'row_too_large',
        expect.stringMatching(/^the row is 3145738 bytes, over the limit of 65536/),
      ],
      'ok',
      'ok',
    ]);
    expect(JSON.stringify(rows[1]).length).toBeLessThan(400);
    expect(rows[1].key).toEqual({});
    // A lower limit (the batch's maxRowBytes) fails the wide line too.
    const low = await readAll(source, 100, { maxRowBytes: 100 });
    expect(low.map((r) => (isInvalidRow(r) ? r.code : 'ok'))).toEqual([
      'ok',
      'row_too_large',
      'row_too_large',
      'ok',
    ]);
    expectNoValues(low, ['huge@b.co', 'xxxx', 'w@b.co', 'yyyy']);
    expect(await readAll(source, 1, { maxRowBytes: 100 })).toEqual(low);
  });

  it('fails a row whose parameters outgrow the limit once escaped', async () => {
    // 50 control characters: 57 bytes in the file, about 300 as JSON.
    const text = `email,name\na@b.co,${'\u0001'.repeat(50)}\nb@b.co,B\n`;
    const source: InputSource = { path: file('escaped.csv', text), format: 'csv' };
    const rows = await readAll(source, 100, { maxRowBytes: 100 });
    expect(rows.map(problemOf)).toEqual([
      ['row_too_large', expect.stringMatching(/parameters are over the limit of 100 bytes/)],
      'ok',
    ]);
  });

  it('does not read a quoted field across lines beyond the row limit', async () => {
    const text = `email,name\na@b.co,"open\n${'b@b.co,B\n'.repeat(30)}`;
    const source: InputSource = { path: file('open-quote.csv', text), format: 'csv' };
    const rows = await readAll(source, 100, { maxRowBytes: 100 });
    expect(rows).toHaveLength(31);
    expect(problemOf(rows[0])).toEqual(['invalid_row', expect.stringMatching(/not closed/)]);
    expect(rows.slice(1).every((r) => !isInvalidRow(r))).toBe(true);
  });

  it('refuses a file whose lines end with a lone carriage return, quoting none of it', async () => {
    const source: InputSource = {
      path: file('mac.csv', 'email,name\ra@b.co,Ann\rb@b.co,Bob\r'),
      format: 'csv',
    };
    const err = await inspectInput(source, 'person_enrichment').then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/lone carriage return/);
    expect(err?.message).not.toContain('Ann');
  });

  it('caps each chunk in bytes, holding at least one row', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `p${i}@b.co,${'n'.repeat(i * 10)}`);
    const source: InputSource = {
      path: file('wide.csv', `email,name\n${lines.join('\n')}\n`),
      format: 'csv',
    };
    const whole = await readAll(source, 1000);
    expect(whole).toHaveLength(40);
    const chunks = await readChunks(source, 1000, { maxBytes: 1000 });
    expect(chunks.flat()).toEqual(whole);
    expect(chunks.length).toBeGreaterThan(5);
    for (const c of chunks) {
      expect(c.length).toBeGreaterThan(0);
      if (c.length > 1) expect(JSON.stringify(c).length).toBeLessThanOrEqual(1000 + c.length);
    }
    // Rows wider than the cap come one per chunk.
    const single = await readChunks(source, 1000, { maxBytes: 10 });
    expect(single.map((c) => c.length)).toEqual(whole.map(() => 1));
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

describe('broken JSONL', () => {
  it('fails rows with a byte-order mark, bad UTF-8 or too many bytes; skips and counts blank lines', async () => {
    const bytes = Buffer.concat([
      Buffer.from('\uFEFF{"email":"a@b.co"}\n\n'),
      Buffer.from('\uFEFF{"email":"bom@b.co"}\n'),
      Buffer.from('{"email":"bad@b.co","name":"R'),
      Buffer.from([0xe9]),
      Buffer.from('"}\n  \n'),
      Buffer.from(`{"email":"big@b.co","name":"${'z'.repeat(200_000)}"}\n`),
      Buffer.from('{"email":"stray@b.co","name":"O"Neil"}\n'),
      Buffer.from('{"email":"c@b.co"}'),
    ]);
    const source: InputSource = { path: file('broken.jsonl', bytes), format: 'jsonl' };
    const info = await inspectInput(source, 'person_enrichment');
    expect(info).toMatchObject({ total: 6, blankLines: 2 });
    const rows = await readAll(source, 100);
    expect(rows.map((r) => [r.row, problemOf(r)])).toEqual([
      [1, 'ok'],
      [2, ['invalid_row', expect.stringMatching(/^line has a byte-order mark/)]],
      [3, 'ok'],
      [4, ['row_too_large', expect.stringMatching(/over the limit of 65536 bytes/)]],
      [5, ['invalid_row', 'line is not a JSON object']],
      [6, 'ok'],
    ]);
    expectNoValues(rows, ['bom@b.co', 'big@b.co', 'zzzz', 'stray@b.co', 'Neil']);
    // Not UTF-8: read as Windows-1252.
    expect(rows[2]).toMatchObject({ params: { email: 'bad@b.co', name: 'Ré' } });
    expect(info.notUtf8Rows).toBe(1);
    for (const size of [1, 4]) expect(await readAll(source, size)).toEqual(rows);
  });
});

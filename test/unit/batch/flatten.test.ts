// CSV rows of result lines: flattening, column order, collisions with the input's columns, and
// odd values (commas, quotes, newlines, unicode, nulls) through csv-stringify and back.
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import {
  cellText,
  csvLayout,
  csvRow,
  flattenResult,
  objectCells,
  ResultColumns,
} from '../../../src/batch/flatten.js';
import type { ResultLine } from '../../../src/batch/types.js';

describe('flattenResult', () => {
  it('names nested fields with dots and keeps arrays as JSON text', () => {
    expect(
      flattenResult({
        full_name: 'Ada Lovelace',
        age: 36,
        verified: false,
        social_profiles: { linkedin: { url: 'https://l.example/ada', followers: 10 } },
        emails: ['a@example.com', 'b@example.com'],
        jobs: [{ title: 'Analyst' }],
        note: null,
        empty: {},
      }),
    ).toEqual([
      ['full_name', 'Ada Lovelace'],
      ['age', '36'],
      ['verified', 'false'],
      ['social_profiles.linkedin.url', 'https://l.example/ada'],
      ['social_profiles.linkedin.followers', '10'],
      ['emails', '["a@example.com","b@example.com"]'],
      ['jobs', '[{"title":"Analyst"}]'],
      ['note', ''],
    ]);
  });

  it('gives no column for an absent result and one `result` column for a non-object', () => {
    expect(flattenResult(undefined)).toEqual([]);
    expect(flattenResult([1, 2])).toEqual([['result', '[1,2]']]);
    expect(flattenResult('text')).toEqual([['result', 'text']]);
  });

  it('writes cells as JSON would, null and undefined empty', () => {
    expect([null, undefined, 0, -1.5, true, 'x', { a: 1 }, []].map(cellText)).toEqual([
      '',
      '',
      '0',
      '-1.5',
      'true',
      'x',
      '{"a":1}',
      '[]',
    ]);
  });
});

describe('ResultColumns', () => {
  it('orders columns by their first row, whatever order the rows are noted in', () => {
    const rows: [number, string[]][] = [
      [3, ['a', 'c', 'd']],
      [1, ['a', 'b']],
      [2, ['e', 'a']],
      [5, ['f']],
    ];
    const forward = new ResultColumns();
    for (const [row, cols] of rows) forward.note(row, cols);
    const backward = new ResultColumns();
    for (const [row, cols] of [...rows].reverse()) backward.note(row, cols);
    expect(forward.ordered()).toEqual(['a', 'b', 'e', 'c', 'd', 'f']);
    expect(backward.ordered()).toEqual(forward.ordered());
  });
});

describe('csvLayout and csvRow', () => {
  const found: ResultLine = {
    row: 1,
    key: { email: 'ada@example.com' },
    outcome: 'found',
    requestId: 'r1',
    result: { email: 'ada@work.example', name: { first: 'Ada' }, message: 'hi' },
  };

  it('puts the input columns first, then outcome, code, message, then the result', () => {
    const layout = csvLayout(['email', 'name'], ['email', 'name.first', 'message']);
    // Result names already taken by the input or the outcome columns are prefixed.
    expect(layout.header).toEqual([
      'email',
      'name',
      'outcome',
      'code',
      'message',
      'result.email',
      'name.first',
      'result.message',
    ]);
    expect(csvRow(layout, ['ada@example.com', 'Ada'], found, 'missing')).toEqual([
      'ada@example.com',
      'Ada',
      'found',
      '',
      '',
      'ada@work.example',
      'Ada',
      'hi',
    ]);
  });

  it('prefixes again when the prefixed name is taken too', () => {
    expect(csvLayout(['x', 'result.x'], ['x']).header).toEqual([
      'x',
      'result.x',
      'outcome',
      'code',
      'message',
      'result.result.x',
    ]);
  });

  it('writes a failed row with its code and message, and a row with no line with the label', () => {
    const layout = csvLayout(['email'], ['email']);
    const failed: ResultLine = {
      row: 2,
      key: {},
      outcome: 'failed',
      code: 'invalid_row',
      message: 'email must be an email address',
    };
    expect(csvRow(layout, ['nope'], failed, 'missing')).toEqual([
      'nope',
      'failed',
      'invalid_row',
      'email must be an email address',
      '',
    ]);
    expect(csvRow(layout, ['x@example.com'], undefined, 'pending')).toEqual([
      'x@example.com',
      'pending',
      '',
      '',
      '',
    ]);
    // A short record (a CSV row with too few fields) still fills every input column.
    expect(csvRow(csvLayout(['a', 'b'], []), ['1'], undefined, 'missing')).toEqual([
      '1',
      '',
      'missing',
      '',
      '',
    ]);
  });

  it('takes the cells of a JSONL object by column name', () => {
    expect(objectCells(['email', 'n', 'tags', 'gone'], { n: 2, email: 'e', tags: ['a'] })).toEqual([
      'e',
      '2',
      '["a"]',
      '',
    ]);
    expect(objectCells(['email'], undefined)).toEqual(['']);
  });

  it('survives commas, quotes, newlines, unicode and nulls through CSV and back', () => {
    const odd = {
      comma: 'Lovelace, Ada',
      quote: 'She said "hello"',
      newline: 'line one\nline two\r\nline three',
      unicode: 'Zoë Ångström 東京 🚀',
      nothing: null,
      leading: '  spaced  ',
      formula: '=1+1',
    };
    const layout = csvLayout(['in,put "col"'], Object.keys(odd));
    const line: ResultLine = { row: 1, key: {}, outcome: 'found', result: odd };
    const text = stringify([
      layout.header,
      csvRow(layout, ['a "quoted", cell\n'], line, 'missing'),
    ]);
    const [header, row]: string[][] = parse(text);
    expect(header).toEqual(layout.header);
    expect(row).toEqual([
      'a "quoted", cell\n',
      'found',
      '',
      '',
      'Lovelace, Ada',
      'She said "hello"',
      'line one\nline two\r\nline three',
      'Zoë Ångström 東京 🚀',
      '',
      '  spaced  ',
      '=1+1',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { checkUsagePeriod, formatUsagePeriod } from '../../../src/contract/usage.js';
import { accepts, problems } from './helpers.js';

const NOW = new Date(Date.UTC(2026, 4, 15)); // May 2026

describe('usage query schema', () => {
  it.each([
    {},
    { month: 1 },
    { month: 12 },
    { year: 2020 },
    { year: 2030 },
    { month: '3', year: '2024' },
  ])('accepts %j', (q) => {
    expect(problems('usage', q)).toEqual([]);
  });
  it.each([
    [{ month: 0 }, 'month'],
    [{ month: 13 }, 'month'],
    [{ month: '1.5' }, 'month'],
    [{ month: 'x' }, 'month'],
    [{ month: true }, 'month'],
    [{ year: 2019 }, 'year'],
    [{ year: 2031 }, 'year'],
    [{ year: '' }, 'year'],
    // Not a parameter name of the catalogue: counted, not named.
    [{ day: 1 }, ''],
  ] as const)('refuses %j', (q, field) => {
    expect(problems('usage', q).map((p) => p.field)).toEqual([field]);
  });
  it('coerces query-string text to numbers', () => {
    expect(accepts('usage', { month: ' 7 ' })).toBe(true);
  });
});

describe('checkUsagePeriod', () => {
  it('defaults to the current month and year', () => {
    expect(checkUsagePeriod({}, NOW)).toEqual({ ok: true, month: 5, year: 2026 });
  });
  it('accepts a past period and the current one', () => {
    expect(checkUsagePeriod({ month: '12', year: '2020' }, NOW)).toEqual({
      ok: true,
      month: 12,
      year: 2020,
    });
    expect(checkUsagePeriod({ month: 5, year: 2026 }, NOW)).toEqual({
      ok: true,
      month: 5,
      year: 2026,
    });
  });
  it.each([0, 13, 'x', 1.5])('month %j is invalid_month', (month) => {
    expect(checkUsagePeriod({ month }, NOW)).toMatchObject({ ok: false, code: 'invalid_month' });
  });
  it.each([2019, 2031, 'y'])('year %j is invalid_year', (year) => {
    expect(checkUsagePeriod({ year }, NOW)).toMatchObject({ ok: false, code: 'invalid_year' });
  });
  it('a future period is invalid_date', () => {
    expect(checkUsagePeriod({ month: 6, year: 2026 }, NOW)).toEqual({
      ok: false,
      code: 'invalid_date',
      message: 'the period is in the future',
    });
    expect(checkUsagePeriod({ month: 1, year: 2027 }, NOW)).toMatchObject({
      ok: false,
      code: 'invalid_date',
    });
  });
  it('formats the period as YYYY-MM', () => {
    expect(formatUsagePeriod(3, 2024)).toBe('2024-03');
    expect(formatUsagePeriod(11, 2024)).toBe('2024-11');
  });
});

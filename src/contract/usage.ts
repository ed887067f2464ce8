// The usage read's period rules: month 1-12, year 2020-2030, and no future period. Each refusal
// maps to the service's own code, so the emulator answers what the service answers.

export type UsagePeriodCheck =
  | { ok: true; month: number; year: number }
  | { ok: false; code: 'invalid_month' | 'invalid_year' | 'invalid_date'; message: string };

const asInt = (v: unknown): number | undefined => {
  if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
  if (typeof v === 'string' && /^\s*\d+\s*$/.test(v)) return Number(v);
  return undefined;
};

/** Resolve month and year (defaults: the current UTC month and year of `now`) and check them. */
export function checkUsagePeriod(
  query: { month?: unknown; year?: unknown },
  now: Date,
): UsagePeriodCheck {
  const currentMonth = now.getUTCMonth() + 1;
  const currentYear = now.getUTCFullYear();
  const month = query.month === undefined ? currentMonth : asInt(query.month);
  const year = query.year === undefined ? currentYear : asInt(query.year);
  if (month === undefined || month < 1 || month > 12) {
    return { ok: false, code: 'invalid_month', message: 'month must be an integer from 1 to 12' };
  }
  if (year === undefined || year < 2020 || year > 2030) {
    return {
      ok: false,
      code: 'invalid_year',
      message: 'year must be an integer from 2020 to 2030',
    };
  }
  if (year > currentYear || (year === currentYear && month > currentMonth)) {
    return { ok: false, code: 'invalid_date', message: 'the period is in the future' };
  }
  return { ok: true, month, year };
}

/** The period string of usage statistics: YYYY-MM. */
export const formatUsagePeriod = (month: number, year: number): string =>
  `${year}-${String(month).padStart(2, '0')}`;

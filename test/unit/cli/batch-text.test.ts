// What `pcds batch status` and `pcds batch resume` tell an operator: the requests and job
// duration line, and what a resume does to the keys' credit breakers.
import { describe, expect, it } from 'vitest';
import { keyWindows, planBatch } from '../../../src/batch/plan.js';
import { paceNote } from '../../../src/config.js';
import { resumeNotes } from '../../../src/cli/batch/control.js';
import { planText } from '../../../src/cli/batch/plan.js';
import { etaText, requestsText } from '../../../src/cli/batch/text.js';

describe('requestsText', () => {
  it('shows requests per row and the job duration estimate once measured', () => {
    expect(requestsText({ requestsPerRow: 2.25, jobMsEstimate: 3_400 })).toBe(
      '2.25 requests per found/empty row; job duration estimate 3400 ms',
    );
  });

  it('says why a figure is missing instead of leaving it out', () => {
    expect(requestsText({})).toBe(
      'requests per row: none measured yet (no row found or empty); ' +
        'job duration estimate: not learned yet (it needs 5 rows found or empty)',
    );
  });

  it('a batch the result cache answered whole measured nothing, and says why', () => {
    expect(requestsText({ cached: 275 })).toBe(
      'requests per row: none measured (the result cache answered 275 rows: they send none); ' +
        'job duration estimate: not learned yet (it needs 5 rows found or empty from the service)',
    );
  });
});

describe('resumeNotes', () => {
  const operator = { code: 'paused_by_operator', message: 'maintenance' };
  const credits = { code: 'insufficient_credits', message: '402 on key k1', keyId: 'k1' };

  it('after an operator pause, names each open breaker as staying open and how to close it', () => {
    expect(resumeNotes({ paused: operator }, ['k1'])).toEqual([
      'key k1: its credit breaker is open and stays open (this batch was paused for paused_by_operator, not for credits); after a top-up: pcds throttle resume k1',
    ]);
    expect(resumeNotes({ paused: operator }, [])).toEqual([]);
  });

  it('after a pause for credits, says the resume closes the breakers', () => {
    expect(resumeNotes({ paused: credits }, ['k1'])[0]).toMatch(
      /^paused for credits: this resume closes the credit breaker of its keys \(open: k1\)/,
    );
  });

  it('says a batch that was not paused does not change', () => {
    expect(resumeNotes({}, ['k1'])).toEqual(['the batch was not paused: nothing changes']);
  });
});

describe('etaText', () => {
  it('shows hours and minutes, "paused" for a paused batch, "--" when there is none', () => {
    expect(etaText({ state: 'running', etaSeconds: 5 * 3600 + 10 * 60 })).toBe('5h10m');
    expect(
      etaText({
        state: 'paused',
        etaSeconds: 60,
        paused: { code: 'paused_by_operator', message: '' },
      }),
    ).toBe('paused');
    expect(etaText({ state: 'running' })).toBe('--');
  });

  it('says when it is not the real service pace (pcds dev --time-scale or --no-limits)', () => {
    const pace = paceNote({ PCDS_TIME_SCALE: 60, PCDS_THROTTLE: 'on' });
    expect(etaText({ state: 'running', etaSeconds: 90 }, pace)).toBe(
      "1m30s (not the real service's pace (emulator at 60x))",
    );
    const real = paceNote({ PCDS_TIME_SCALE: 1, PCDS_THROTTLE: 'on' });
    expect(etaText({ state: 'running', etaSeconds: 90 }, real)).toBe('1m30s');
  });
});

describe('planText', () => {
  it('names the rows sent, the requests, the hours at the limits and what would shorten it', () => {
    const key = keyWindows({ id: 'k1', perMinute: 100, perHour: 1000 }, 1);
    const plan = planBatch({
      rows: 3000,
      duplicates: 0,
      invalid: 0,
      webhooks: false,
      keys: [key],
      creditsPerRow: 1,
      timeScale: 1,
    });
    expect(planText({ plan, keys: [key], assumed: false }, 1, false)).toEqual([
      'plan: 3000 rows, 3000 sent x ~2 requests (submit + first poll, timed to the job) = 6000 requests',
      '  1 key (100/min, 1000/h each): about 5h10m at the limits',
      '  credits: up to 3000 (every row sent found; empty results are free)',
      '  shorter: one more key in the pool (PCDS_API_KEYS), about 2h10m; --webhooks (1 request a row), about 2h10m',
    ]);
  });

  it('says what was trimmed, which rows were not UTF-8 and which values could not be read', () => {
    const key = keyWindows({ id: 'k1', perMinute: 100, perHour: 1000 }, 1);
    const plan = planBatch({
      rows: 324,
      duplicates: 0,
      invalid: 0,
      trimmed: { rows: 6, fields: { email: 6, name: 2 } },
      text: {
        encoding: 'utf-8',
        notUtf8: { rows: 12, readAs: 'windows-1252' },
        unreadable: { rows: 1, fields: { name: 1 } },
      },
      webhooks: false,
      keys: [key],
      creditsPerRow: 1,
      timeScale: 1,
    });
    const lines = planText({ plan, keys: [key], assumed: false }, 1, false);
    expect(lines.slice(3, 6)).toEqual([
      '  trimmed: 6 rows had spaces around a value (email 6, name 2): sent without them',
      "  encoding: 12 rows not UTF-8, read as windows-1252 (a spreadsheet's CSV on Windows); if the file is in another encoding, name it with --encoding",
      '  unreadable: 1 row had a value that could not be read as UTF-8 or windows-1252 (name 1): sent without it',
    ]);
  });
});

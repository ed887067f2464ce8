// Credits and usage per key and calendar month. Every charge goes through `charge`, so GET /usage
// reports exactly what was taken from the balance.
import type { ApiKeyRecord } from './keys.js';

export type UsageBucket = 'search' | 'enrichment';

interface MonthUsage {
  credits: { search: number; enrichment: number };
  requests: { search: number; enrichment: number };
  searchResultsReturned: number;
  enrichmentsPerformed: number;
}

const emptyMonth = (): MonthUsage => ({
  credits: { search: 0, enrichment: 0 },
  requests: { search: 0, enrichment: 0 },
  searchResultsReturned: 0,
  enrichmentsPerformed: 0,
});

export const periodOf = (d: Date) =>
  `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;

export class Ledger {
  private readonly months = new Map<string, MonthUsage>();

  private month(keyId: string, period: string): MonthUsage {
    const k = `${keyId}|${period}`;
    let m = this.months.get(k);
    if (!m) {
      m = emptyMonth();
      this.months.set(k, m);
    }
    return m;
  }

  /** A positive balance is required before a request is accepted. */
  hasCredit(key: ApiKeyRecord): boolean {
    return key.credits === null || key.credits > 0;
  }

  /** An accepted billable submit (counted whether or not its result turns out empty). */
  countRequest(key: ApiKeyRecord, bucket: UsageBucket, at = new Date()): void {
    this.month(key.id, periodOf(at)).requests[bucket]++;
  }

  /**
   * Take `amount` credits for a non-empty result. The balance may go below zero on the last
   * charge (the request was accepted with a positive balance); the next request is then refused.
   */
  charge(
    key: ApiKeyRecord,
    bucket: UsageBucket,
    amount: number,
    rows: number,
    at = new Date(),
  ): void {
    if (amount <= 0) return;
    const m = this.month(key.id, periodOf(at));
    m.credits[bucket] += amount;
    if (bucket === 'search') m.searchResultsReturned += rows;
    else m.enrichmentsPerformed++;
    if (key.credits !== null) key.credits -= amount;
  }

  usage(key: ApiKeyRecord, year: number, month: number): Record<string, unknown> {
    const period = `${year}-${String(month).padStart(2, '0')}`;
    const m = this.months.get(`${key.id}|${period}`) ?? emptyMonth();
    const total = m.credits.search + m.credits.enrichment;
    return {
      month,
      year,
      period,
      credits_used: { total, search: m.credits.search, enrichment: m.credits.enrichment },
      requests_count: {
        total: m.requests.search + m.requests.enrichment,
        search: m.requests.search,
        enrichment: m.requests.enrichment,
      },
      limits: {
        monthly_allocation: key.monthlyAllocation ?? 0,
        available_credits: key.credits === null ? 0 : Math.max(0, key.credits),
        is_unlimited: key.credits === null,
      },
      breakdown: {
        search_results_returned: m.searchResultsReturned,
        enrichments_performed: m.enrichmentsPerformed,
        total_credits_consumed: total,
      },
    };
  }

  reset(): void {
    this.months.clear();
  }
}

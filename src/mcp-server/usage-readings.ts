// The `usage` tool's answers: short-lived readings of GET /usage. Each read takes a permit of the
// key's windows like any request, so a caller that floods the tool would spend the pool's hour
// for everyone: a reading serves every caller for a minute, and a caller's readings cost the pool
// at most one request a minute.
import { PcdsError } from '../contract/pcds-error.js';

/** How long a reading answers, and how often one caller's readings may reach the service. */
export const USAGE_READING_MS = 60_000;

export interface UsageQuery {
  month?: number;
  year?: number;
}

/** A reading as the tool answers it: the service's usage, and when it was read. */
export type UsageReading = Record<string, unknown> & { read_at: string };

/** Reads GET /usage once, for the caller (its tenant) who asked. */
export type UsageFetch = (
  caller: string,
  query: UsageQuery,
  keyId: string | undefined,
) => Promise<unknown>;

export class UsageReadings {
  /** Readings by key and query, shared by every caller: the account's usage is the same for all. */
  private readonly readings = new Map<string, { at: number; value: Promise<unknown> }>();
  /** When each caller's reading last reached the service. */
  private readonly fetchedAt = new Map<string, number>();

  constructor(
    private readonly fetch: UsageFetch,
    private readonly now: () => number = Date.now,
    private readonly ttlMs: number = USAGE_READING_MS,
  ) {}

  /**
   * A fresh reading of this key and query (any caller's, under a minute old), or a new one when
   * this caller's last request to the service is a minute old; refused otherwise
   * (usage_rate_limited, saying when to ask again).
   */
  async read(caller: string, query: UsageQuery, keyId?: string): Promise<UsageReading> {
    const id = JSON.stringify([keyId ?? null, query.month ?? null, query.year ?? null]);
    const now = this.now();
    const kept = this.readings.get(id);
    if (kept && now - kept.at < this.ttlMs) return this.shown(kept);
    const last = this.fetchedAt.get(caller);
    if (last !== undefined && now - last < this.ttlMs) {
      const seconds = Math.ceil((last + this.ttlMs - now) / 1000);
      throw new PcdsError(
        'usage_rate_limited',
        `usage is read from the service at most once a minute per caller: ask again in ${seconds} s (or for the month read last)`,
      );
    }
    this.fetchedAt.set(caller, now);
    this.sweep(now);
    const reading = { at: now, value: this.fetch(caller, query, keyId) };
    this.readings.set(id, reading);
    // A failed read is not kept: the next caller tries again (within its own budget).
    reading.value.catch(() => {
      if (this.readings.get(id) === reading) this.readings.delete(id);
    });
    return this.shown(reading);
  }

  private async shown(reading: { at: number; value: Promise<unknown> }): Promise<UsageReading> {
    const value = await reading.value;
    const doc =
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : { usage: value };
    return { ...doc, read_at: new Date(reading.at).toISOString() };
  }

  /** Readings and callers whose minute is over are forgotten: the maps stay small. */
  private sweep(now: number): void {
    for (const [id, r] of this.readings) if (now - r.at >= this.ttlMs) this.readings.delete(id);
    for (const [caller, at] of this.fetchedAt)
      if (now - at >= this.ttlMs) this.fetchedAt.delete(caller);
  }
}

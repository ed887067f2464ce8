// Fault injection, set at start or at run time: request-level faults (503, 429 bursts, slow
// replies, dropped connections) and job-level ones (terminal failures, a stored 429, not_found,
// jobs that never finish). Draws come from a seeded stream, so a run is reproducible.
import { faultsSchema, type Faults } from './options.js';
import { prng } from './random.js';

export type RequestFault =
  | { kind: 'none' }
  | { kind: 'unavailable' }
  | { kind: 'rate_limited'; retryAfterSeconds: number }
  | { kind: 'drop' };

export type JobFault =
  'none' | 'search_error' | 'internal_error' | 'rate_limited' | 'not_found' | 'never_finish';

export class FaultInjector {
  private faults!: Faults;
  private random!: () => number;
  /** When the burst schedule started: when the faults were set, or the first request after it. */
  private burstFrom: number | null = null;
  /** Cheap test on the hot path: false when every share is zero. */
  active = false;

  constructor(
    initial: Faults,
    private readonly seed: number,
    private readonly timeScale: number,
  ) {
    this.apply(initial);
  }

  get(): Faults {
    return structuredClone(this.faults);
  }

  /** Replace the faults (PUT semantics); the burst schedule restarts now. */
  set(input: unknown): Faults {
    this.apply(faultsSchema.parse(input ?? {}));
    return this.get();
  }

  /** The same at start-up and on every set: a fresh draw stream and burst schedule. */
  private apply(faults: Faults): void {
    this.faults = faults;
    this.burstFrom = faults.rateLimitBurst?.fromFirstRequest ? null : Date.now();
    this.random = prng(this.seed ^ 0x5eed);
    this.refresh();
  }

  private refresh(): void {
    const f = this.faults;
    this.active =
      f.unavailableShare > 0 ||
      f.rateLimitShare > 0 ||
      f.rateLimitBurst !== null ||
      f.jobSearchErrorShare > 0 ||
      f.jobInternalErrorShare > 0 ||
      f.jobRateLimitedShare > 0 ||
      f.jobNotFoundShare > 0 ||
      f.jobNeverFinishShare > 0 ||
      f.slowReplyShare > 0 ||
      f.dropConnectionShare > 0 ||
      f.webhookDropShare > 0;
  }

  private applies(path: string): boolean {
    return this.active && (this.faults.paths.length === 0 || this.faults.paths.includes(path));
  }

  /** Milliseconds to hold the reply back (0: none). */
  slowReplyMs(path: string): number {
    if (!this.applies(path) || this.faults.slowReplyShare === 0) return 0;
    return this.random() < this.faults.slowReplyShare
      ? this.faults.slowReplyMs / this.timeScale
      : 0;
  }

  forRequest(path: string, now = Date.now()): RequestFault {
    if (!this.applies(path)) return { kind: 'none' };
    const f = this.faults;
    if (f.dropConnectionShare > 0 && this.random() < f.dropConnectionShare) return { kind: 'drop' };
    if (f.rateLimitBurst) {
      const duration = f.rateLimitBurst.durationMs / this.timeScale;
      const every = (f.rateLimitBurst.everyMs ?? Infinity) / this.timeScale;
      this.burstFrom ??= now;
      const since = now - this.burstFrom;
      const intoCycle = Number.isFinite(every) ? since % every : since;
      if (intoCycle < duration) {
        // The burst ends at a known time: Retry-After points just past it.
        return {
          kind: 'rate_limited',
          retryAfterSeconds: Math.max(1, Math.ceil((duration - intoCycle + 1) / 1000)),
        };
      }
    }
    if (f.rateLimitShare > 0 && this.random() < f.rateLimitShare)
      return { kind: 'rate_limited', retryAfterSeconds: 1 };
    if (f.unavailableShare > 0 && this.random() < f.unavailableShare)
      return { kind: 'unavailable' };
    return { kind: 'none' };
  }

  /** True when this job's webhook deliveries are to be lost. */
  dropsWebhook(path: string): boolean {
    if (!this.applies(path) || this.faults.webhookDropShare === 0) return false;
    return this.random() < this.faults.webhookDropShare;
  }

  forJob(path: string): JobFault {
    if (!this.applies(path)) return 'none';
    const f = this.faults;
    const shares: [JobFault, number][] = [
      ['search_error', f.jobSearchErrorShare],
      ['internal_error', f.jobInternalErrorShare],
      ['rate_limited', f.jobRateLimitedShare],
      ['not_found', f.jobNotFoundShare],
      ['never_finish', f.jobNeverFinishShare],
    ];
    if (shares.every(([, s]) => s === 0)) return 'none';
    let u = this.random();
    for (const [kind, s] of shares) {
      if (u < s) return kind;
      u -= s;
    }
    return 'none';
  }
}

// Counters per key for tests and benchmarks: what the emulator saw and answered, so a test can
// assert "no duplicate submit" or "exactly N credits" without parsing logs.

export interface KeyStats {
  requests: Record<string, number>;
  rateLimited: number;
  creditsCharged: number;
  jobsSubmitted: number;
  duplicateSubmits: number;
  webhookDeliveries: number;
  webhookFailures: number;
}

const empty = (): KeyStats => ({
  requests: {},
  rateLimited: 0,
  creditsCharged: 0,
  jobsSubmitted: 0,
  duplicateSubmits: 0,
  webhookDeliveries: 0,
  webhookFailures: 0,
});

export class Stats {
  private readonly byKey = new Map<string, KeyStats>();
  /** Fingerprints of submitted inputs per key, to count duplicates. */
  private readonly seen = new Map<string, Set<string>>();
  /**
   * Fingerprints of every submit that reached the server, whatever its answer (a 429 included):
   * a test tells a request that may have been sent from one that never left its worker.
   */
  private readonly arrived = new Set<string>();

  of(keyId: string): KeyStats {
    let s = this.byKey.get(keyId);
    if (!s) {
      s = empty();
      this.byKey.set(keyId, s);
    }
    return s;
  }

  request(keyId: string, method: string, path: string): void {
    const r = this.of(keyId).requests;
    const k = `${method} ${path}`;
    r[k] = (r[k] ?? 0) + 1;
  }

  submitted(keyId: string, fingerprint: string): void {
    const s = this.of(keyId);
    s.jobsSubmitted++;
    let set = this.seen.get(keyId);
    if (!set) {
      set = new Set();
      this.seen.set(keyId, set);
    }
    if (set.has(fingerprint)) s.duplicateSubmits++;
    else set.add(fingerprint);
  }

  /** A submit arrived (before any check of its key, its rate or its input). */
  submitArrived(fingerprint: string): void {
    this.arrived.add(fingerprint);
  }

  hasArrived(fingerprint: string): boolean {
    return this.arrived.has(fingerprint);
  }

  snapshot(): Record<string, KeyStats> {
    return Object.fromEntries([...this.byKey].map(([k, v]) => [k, structuredClone(v)]));
  }

  reset(keyId?: string): void {
    if (keyId) {
      this.byKey.delete(keyId);
      this.seen.delete(keyId);
    } else {
      this.byKey.clear();
      this.seen.clear();
      this.arrived.clear();
    }
  }
}

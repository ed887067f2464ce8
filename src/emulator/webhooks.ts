// Webhook delivery: on completion the poll's envelope is POSTed to the job's callback_url,
// `deliveries` times (receivers must be idempotent on request_id), each retried on failure after
// a delay shortened by the time scale. Deliveries are never charged.
import type { FaultInjector } from './faults.js';
import type { Job } from './jobs.js';
import type { EmulatorOptions } from './options.js';
import type { Rendered } from './replies.js';
import type { Stats } from './stats.js';

export class WebhookDispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly opts: EmulatorOptions,
    private readonly stats: Stats,
    private readonly faults: FaultInjector,
  ) {}

  deliver(job: Job, rendered: Rendered): void {
    if (!job.callbackUrl) return;
    if (this.faults.dropsWebhook(job.endpoint.path)) return;
    for (let i = 0; i < this.opts.webhooks.deliveries; i++) {
      const p = this.attempt(job.keyId, job.callbackUrl, rendered.body).finally(() =>
        this.inFlight.delete(p),
      );
      this.inFlight.add(p);
    }
  }

  private async attempt(keyId: string, url: string, body: string): Promise<void> {
    const w = this.opts.webhooks;
    for (let attempt = 0; attempt <= w.retries && !this.stopped; attempt++) {
      if (attempt > 0)
        await new Promise((r) => setTimeout(r, w.retryDelayMs / this.opts.timeScale));
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'pcds-emulator' },
          body,
          signal: AbortSignal.timeout(w.timeoutMs),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) {
          this.stats.of(keyId).webhookDeliveries++;
          return;
        }
      } catch {
        // Receiver down or slow: counted below and retried.
      }
      this.stats.of(keyId).webhookFailures++;
    }
  }

  /** Wait for deliveries under way (tests), bounded by `timeoutMs`. */
  async drain(timeoutMs = 5000): Promise<void> {
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise((r) => setTimeout(r, timeoutMs)),
    ]);
  }

  stop(): void {
    this.stopped = true;
  }
}

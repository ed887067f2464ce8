// Jobs and their state machine: queued -> processing -> a terminal status, on a timeline fixed at
// submit (latency shortened by the time scale). Status is read from the clock, so polls cost no timers; one
// timer per job settles it (charges credits, sends the webhook) when it completes.
import { randomBytes } from 'node:crypto';
import {
  extractResult,
  formatTimestamp,
  isEmptyResult,
  type EndpointDef,
} from '../contract/index.js';
import type { Dataset } from './dataset/dataset.js';
import type { FaultInjector, JobFault } from './faults.js';
import type { KeyStore } from './keys.js';
import type { Ledger } from './ledger.js';
import type { EmulatorOptions } from './options.js';
import { searchPeople, searchRow, type ScoredPerson } from './person-search.js';
import { priceOf, type Price } from './prices.js';
import { errorBody, successBody, successBodyRaw, type Rendered } from './replies.js';
import { computePayload, type Payload } from './results.js';
import type { Stats } from './stats.js';

export interface SearchState {
  matches: ScoredPerson[];
  maxScore: number;
  first: { offset: number; limit: number };
  /** Page POSTs accepted while the search ran; each is charged when it completes. */
  pending: { offset: number; limit: number }[];
}

export interface Job {
  requestId: string;
  keyId: string;
  endpoint: EndpointDef;
  input: Record<string, unknown>;
  createdAt: number;
  processingAt: number;
  doneAt: number;
  initialStatus: 'queued' | 'processing';
  fault: JobFault;
  payload?: Payload;
  price: Price;
  settled: boolean;
  callbackUrl?: string;
  search?: SearchState;
  /** The terminal reply's body without its timestamp, rendered once (polls of finished jobs are the hot path). */
  terminal?: { status: number; data?: string; body?: string };
}

export type WebhookSender = (job: Job, rendered: Rendered) => void;

/** Searches cannot page past offset 999 (the interface's range). */
const MAX_ROW = 1000;

let counter = 0;
export function newRequestId(now = Date.now()): string {
  counter = (counter + 1) % 100;
  return `${randomBytes(16).toString('hex')}_${Math.floor(now / 1000)}_${counter}`;
}

export class JobStore {
  private readonly jobs = new Map<string, Job>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly unsettled = new Set<Job>();
  onSettled: WebhookSender = () => {};

  constructor(
    private readonly opts: EmulatorOptions,
    private readonly d: Dataset,
    private readonly keys: KeyStore,
    private readonly ledger: Ledger,
    private readonly stats: Stats,
    private readonly faults: FaultInjector,
  ) {}

  /** Latency multiplier: deeper lookups and fresher or lower-priority searches take longer. */
  private slowness(endpoint: EndpointDef, input: Record<string, unknown>): number {
    let m = 1;
    if (input.lookup_mode === 'fast') m *= 0.5;
    else if (input.lookup_mode === 'balanced') m *= 0.75;
    if (endpoint.name === 'person_search') {
      if (input.type === 'light') m *= 2;
      else if (input.type === 'medium') m *= 1.5;
      if (input.high_freshness === true && input.type !== 'light') m *= 1.5;
    }
    if (endpoint.price === 'premium_enrichment') m *= 1.5;
    return m;
  }

  submit(
    keyId: string,
    endpoint: EndpointDef,
    input: Record<string, unknown>,
    callbackUrl: string | undefined,
    page?: { offset: number; limit: number },
  ): Job {
    const now = Date.now();
    // The time scale is how many times faster than the service: durations are divided by it.
    const scale = this.slowness(endpoint, input) / this.opts.timeScale;
    const fault = this.faults.forJob(endpoint.path);
    const processingAt = now + this.opts.latency.queuedMs * scale;
    const doneAt =
      fault === 'never_finish' ? Infinity : processingAt + this.opts.latency.processingMs * scale;
    const job: Job = {
      requestId: newRequestId(now),
      keyId,
      endpoint,
      input,
      createdAt: now,
      processingAt,
      doneAt,
      // Person search's contract has no queued state: it answers processing.
      initialStatus: endpoint.polling === 'person_search' ? 'processing' : 'queued',
      fault,
      price: priceOf(endpoint, input, this.opts.prices),
      settled: false,
      ...(callbackUrl ? { callbackUrl } : {}),
    };
    if (endpoint.name === 'person_search') {
      const matches = searchPeople(this.d, input);
      const first = page ?? { offset: 0, limit: 10 };
      job.search = { matches, maxScore: matches[0]?.score ?? 0, first, pending: [first] };
    } else {
      job.payload = computePayload(this.d, this.opts.seed, endpoint, input);
    }
    this.jobs.set(job.requestId, job);
    if (Number.isFinite(doneAt)) {
      this.unsettled.add(job);
      const t = setTimeout(
        () => {
          this.timers.delete(t);
          this.settle(job);
        },
        Math.max(0, doneAt - now),
      );
      this.timers.add(t);
    }
    return job;
  }

  get(requestId: string, now = Date.now()): Job | undefined {
    this.evictExpired(now);
    return this.jobs.get(requestId);
  }

  status(job: Job, now = Date.now()): string {
    if (now < job.processingAt) return job.initialStatus;
    if (now < job.doneAt) return 'processing';
    return 'terminal';
  }

  /**
   * Settle every job due by `now` (before reading balances, so they are exact), and forget jobs
   * older than the retention period. Jobs sit in the map in submit order, so eviction looks only
   * at the ones it removes.
   */
  settleDue(now = Date.now()): void {
    for (const job of this.unsettled) if (job.doneAt <= now) this.settle(job);
    this.evictExpired(now);
  }

  /** Forget jobs past the retention period; cheap when none is (it stops at the first young job). */
  private evictExpired(now: number): void {
    const cutoff = now - this.opts.jobRetentionMs / this.opts.timeScale;
    for (const job of this.jobs.values()) {
      if (job.createdAt >= cutoff) break;
      if (!job.settled && job.doneAt <= now) this.settle(job);
      this.unsettled.delete(job);
      this.jobs.delete(job.requestId);
    }
  }

  private charge(job: Job, amount: number, rows: number): void {
    const key = this.keys.get(job.keyId);
    if (!key || amount <= 0) return;
    this.ledger.charge(key, job.price.bucket, amount, rows);
    this.stats.of(job.keyId).creditsCharged += amount;
  }

  private settle(job: Job): void {
    if (job.settled) return;
    job.settled = true;
    this.unsettled.delete(job);
    if (job.fault === 'none') {
      if (job.search) {
        for (const p of job.search.pending) {
          const rows = this.rowCount(job, p.offset, p.limit);
          if (rows > 0) this.charge(job, job.price.amount, rows);
        }
        job.search.pending = [];
      } else if (
        job.payload &&
        !isEmptyResult(extractResult(job.payload, job.endpoint.resultPath))
      ) {
        this.charge(job, job.price.amount, 0);
      }
    }
    if (job.callbackUrl) this.onSettled(job, this.renderPoll(job, job.doneAt, job.search?.first));
  }

  private rowCount(job: Job, offset: number, limit: number): number {
    const total = Math.min(job.search?.matches.length ?? 0, MAX_ROW);
    return Math.max(0, Math.min(offset + limit, total) - offset);
  }

  ack(job: Job): Rendered {
    const q = `request_id=${job.requestId}`;
    return {
      status: 202,
      body: successBody({
        request_id: job.requestId,
        status: job.initialStatus,
        message: `Request accepted. Poll GET ${job.endpoint.path}?${q}${job.search ? '&offset=<offset>&limit=<limit>' : ''} for its status and result.`,
      }),
    };
  }

  /** A page POST on an existing search: fulfilled at once when the search is done, else queued. */
  pagePost(job: Job, offset: number, limit: number, now = Date.now()): Rendered {
    if (this.status(job, now) !== 'terminal') {
      job.search?.pending.push({ offset, limit });
      return {
        status: 202,
        body: successBody({
          request_id: job.requestId,
          status: 'processing',
          message: `Page accepted. Poll GET ${job.endpoint.path}?request_id=${job.requestId}&offset=${offset}&limit=${limit}.`,
        }),
      };
    }
    this.settle(job);
    if (job.fault !== 'none') return this.renderPoll(job, now);
    const rows = this.rowCount(job, offset, limit);
    if (rows > 0) this.charge(job, job.price.amount, rows);
    // The POST carries no rows: they are read with GET request_id + offset + limit.
    const { status, has_more, next_cursor } = this.pageInfo(job, offset, limit);
    return {
      status: 200,
      body: successBody({
        request_id: job.requestId,
        status,
        completed: true,
        offset,
        limit,
        has_more,
        next_cursor,
        error: null,
        created_on: formatTimestamp(new Date(job.createdAt)),
        completed_on: formatTimestamp(new Date(Math.max(job.doneAt, job.createdAt))),
      }),
    };
  }

  private pageInfo(job: Job, offset: number, limit: number) {
    const total = Math.min(job.search?.matches.length ?? 0, MAX_ROW);
    const next = offset + limit;
    const hasMore = next < total;
    return {
      // The source has nothing beyond this page: exhausted; more rows remain: completed.
      status: hasMore ? 'completed' : 'exhausted',
      has_more: hasMore,
      next_cursor: hasMore ? encodeCursor(job.requestId, next, limit) : null,
      total,
    };
  }

  renderPoll(job: Job, now = Date.now(), page?: { offset: number; limit: number }): Rendered {
    if (job.terminal?.data !== undefined)
      return { status: job.terminal.status, body: successBodyRaw(job.terminal.data) };
    const status = this.status(job, now);
    const created_on = formatTimestamp(new Date(job.createdAt));
    if (status !== 'terminal') {
      return {
        status: 202,
        body: successBody({
          request_id: job.requestId,
          status,
          completed: false,
          error: null,
          created_on,
        }),
      };
    }
    if (!job.settled) this.settle(job);
    const completed_on = formatTimestamp(new Date(job.doneAt));
    switch (job.fault) {
      case 'search_error':
        return {
          status: 500,
          body: errorBody('search_error', 'The search failed while processing this request.'),
        };
      case 'internal_error':
        return {
          status: 500,
          body: errorBody('internal_error', 'An internal error ended this request.'),
        };
      case 'rate_limited':
        // Stored terminal status 429: a failed envelope in a 200, with no Retry-After, so it
        // cannot be mistaken for throttling of the poll itself.
        return {
          status: 200,
          body: errorBody(
            'rate_limit_exceeded',
            'The request hit a rate limit while processing; submit a new one after the limit resets.',
          ),
        };
      case 'not_found':
        return {
          status: 200,
          body: successBody({
            request_id: job.requestId,
            status: 'not_found',
            completed: true,
            result: null,
            error: { code: 'not_found', message: 'No record matches the input.' },
            created_on,
            completed_on,
          }),
        };
      default:
        break;
    }
    if (job.search) {
      const p = page ?? { offset: 0, limit: job.search.first.limit };
      const info = this.pageInfo(job, p.offset, p.limit);
      const slice = job.search.matches.slice(p.offset, Math.min(p.offset + p.limit, MAX_ROW));
      return {
        status: 200,
        body: successBody({
          request_id: job.requestId,
          status: info.status,
          completed: true,
          results: slice.map((s) =>
            searchRow(this.d, this.opts.seed, s, job.input, job.search?.maxScore ?? 0),
          ),
          offset: p.offset,
          limit: p.limit,
          total: info.total,
          has_more: info.has_more,
          next_cursor: info.next_cursor,
          error: null,
          created_on,
          completed_on,
        }),
      };
    }
    const data = JSON.stringify({
      request_id: job.requestId,
      status: 'completed',
      completed: true,
      ...job.payload,
      error: null,
      created_on,
      completed_on,
    });
    job.terminal = { status: 200, data };
    return { status: 200, body: successBodyRaw(data) };
  }

  count(): number {
    return this.jobs.size;
  }

  reset(): void {
    this.stop();
    this.jobs.clear();
    this.unsettled.clear();
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}

/** Cursors are opaque to callers; here they carry the search, offset and limit of the next page. */
export function encodeCursor(requestId: string, offset: number, limit: number): string {
  return Buffer.from(JSON.stringify({ r: requestId, o: offset, l: limit })).toString('base64url');
}

export function decodeCursor(
  cursor: string,
): { requestId: string; offset: number; limit: number } | undefined {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      r?: unknown;
      o?: unknown;
      l?: unknown;
    };
    // Only what this service hands out: an offset of 0-999 and a limit of 1-100.
    if (
      typeof v.r === 'string' &&
      Number.isInteger(v.o) &&
      Number.isInteger(v.l) &&
      (v.o as number) >= 0 &&
      (v.o as number) < MAX_ROW &&
      (v.l as number) >= 1 &&
      (v.l as number) <= 100
    ) {
      return { requestId: v.r, offset: v.o as number, limit: v.l as number };
    }
  } catch {
    // fall through: not a cursor of ours
  }
  return undefined;
}

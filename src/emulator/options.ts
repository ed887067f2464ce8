// The emulator's options: one zod schema for the in-process API, the --config JSON file and the
// CLI flags, so every way of starting it is validated the same way.
import { PcdsError } from '../contract/pcds-error.js';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { timeScaleProblem } from '../contract/time-scale.js';

const share = z.number().min(0).max(1);
const ms = z.number().int().min(0);

export const PRODUCTS = ['enrichment', 'search', 'newsfeed'] as const;

export const faultsSchema = z
  .object({
    /** Share of keyed requests answered 503 service_unavailable. */
    unavailableShare: share.default(0),
    /** Share of keyed requests answered with a lone 429 (Retry-After 1 s). */
    rateLimitShare: share.default(0),
    /**
     * Periodic 429 bursts: every `everyMs`, all keyed requests get 429 for `durationMs`. The
     * schedule starts when the faults are set, or with `fromFirstRequest` at the first request
     * that meets it (so a burst is sure to be seen, however bursty the traffic).
     */
    rateLimitBurst: z
      .object({
        durationMs: ms.min(1),
        everyMs: ms.min(1).optional(),
        fromFirstRequest: z.boolean().optional(),
      })
      .strict()
      .nullable()
      .default(null),
    /** Shares of jobs that end in each failure. Drawn once per job at submit. */
    jobSearchErrorShare: share.default(0),
    jobInternalErrorShare: share.default(0),
    /** Jobs whose stored terminal status is 429. */
    jobRateLimitedShare: share.default(0),
    jobNotFoundShare: share.default(0),
    /** Jobs that stay processing for ever. */
    jobNeverFinishShare: share.default(0),
    /** Share of replies held back by `slowReplyMs` before being sent. */
    slowReplyShare: share.default(0),
    slowReplyMs: ms.default(2000),
    /** Share of requests whose connection is closed without a reply. */
    dropConnectionShare: share.default(0),
    /** Share of completed jobs whose webhook deliveries are lost (never sent). */
    webhookDropShare: share.default(0),
    /** Restrict the faults to these paths (e.g. ["/person/enrichment"]); empty means every keyed path. */
    paths: z.array(z.string().startsWith('/')).default([]),
  })
  .strict();
export type Faults = z.infer<typeof faultsSchema>;

export const priceTableSchema = z
  .object({
    enrichment: z.number().int().min(0).default(1),
    premium_enrichment: z.number().int().min(0).default(3),
    newsfeed: z.number().int().min(0).default(1),
    /** Per fulfilled person-search page, by type tier; other search endpoints cost `search.premium`. */
    search: z
      .object({
        light: z.number().int().min(0).default(1),
        medium: z.number().int().min(0).default(2),
        premium: z.number().int().min(0).default(3),
      })
      .strict()
      .prefault({}),
    /** Added to a search page's price when the toggle is on (after the light-tier rule). */
    toggles: z
      .object({
        show_emails: z.number().int().min(0).default(1),
        show_phone_numbers: z.number().int().min(0).default(2),
        profile_scoring: z.number().int().min(0).default(1),
        insights: z.number().int().min(0).default(2),
        high_freshness: z.number().int().min(0).default(1),
      })
      .strict()
      .prefault({}),
  })
  .strict();
export type PriceTable = z.infer<typeof priceTableSchema>;

export const keySeedSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
    key: z.string().min(8),
    secret: z.string().min(8),
    products: z.array(z.enum(PRODUCTS)).default([...PRODUCTS]),
    /** null: unlimited. */
    credits: z.number().int().min(0).nullable().default(100_000),
    perMinute: z.number().int().positive().optional(),
    perHour: z.number().int().positive().optional(),
  })
  .strict();

export const emulatorOptionsSchema = z
  .object({
    port: z.number().int().min(0).max(65535).default(8787),
    host: z.string().default('127.0.0.1'),
    seed: z.number().int().default(42),
    dataset: z
      .object({
        people: z.number().int().min(10).max(200_000).default(5000),
        companies: z.number().int().min(5).max(50_000).default(600),
      })
      .strict()
      .prefault({}),
    /**
     * How many times faster than the real service every latency and rate-limit window runs
     * (1-3600): 100 makes a minute window 600 ms.
     */
    timeScale: z
      .number()
      .superRefine((v, ctx) => {
        const problem = timeScaleProblem(v);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      })
      .default(1),
    /**
     * How long a job stays readable after it was submitted (at the real pace); older jobs
     * are forgotten (their request_id then answers request_not_found), so memory stays bounded.
     */
    jobRetentionMs: ms.min(1).default(24 * 3_600_000),
    /** Milliseconds a job spends in each stage before its terminal status (at the real pace). */
    latency: z
      .object({ queuedMs: ms.default(300), processingMs: ms.default(1200) })
      .strict()
      .prefault({}),
    limits: z
      .object({
        enabled: z.boolean().default(true),
        perMinute: z.number().int().positive().default(100),
        perHour: z.number().int().positive().default(1000),
      })
      .strict()
      .prefault({}),
    prices: priceTableSchema.prefault({}),
    faults: faultsSchema.prefault({}),
    /** Development switch: accept callback URLs on loopback (localhost, 127.0.0.0/8, ::1). */
    allowLoopbackCallbacks: z.boolean().default(false),
    webhooks: z
      .object({
        /** How many times each completed job is delivered (receivers must be idempotent). */
        deliveries: z.number().int().min(1).max(10).default(1),
        /** Further attempts when the receiver fails (non-2xx or no connection). */
        retries: z.number().int().min(0).max(20).default(3),
        retryDelayMs: ms.default(1000),
        timeoutMs: ms.min(1).default(5000),
      })
      .strict()
      .prefault({}),
    /** OAuth on the MCP endpoint: lifetimes at the real pace (access tokens are short-lived). */
    mcpOAuth: z
      .object({
        accessTokenTtlMs: ms.min(1).default(900_000),
        refreshTokenTtlMs: ms.min(1).default(30 * 24 * 3_600_000),
        authorizationCodeTtlMs: ms.min(1).default(600_000),
      })
      .strict()
      .prefault({}),
    /** Guards /v1/api-keys and /admin; derived from the seed when omitted. */
    adminToken: z.string().min(8).optional(),
    /** The development key; derived from the seed when omitted. */
    devKey: z
      .object({
        key: z.string().min(8),
        secret: z.string().min(8),
        credits: z.number().int().min(0).nullable().default(100_000),
      })
      .strict()
      .optional(),
    /** Further keys present from the start. */
    keys: z.array(keySeedSchema).default([]),
    /** Read the client address from X-Forwarded-For (for allow-list tests behind a proxy). */
    trustProxy: z.boolean().default(false),
    /**
     * Bounds of the listener, as every listener of the project keeps them: a request's headers
     * within headersTimeoutMs, the whole request within requestTimeoutMs (a client trickling its
     * headers is cut off), at most maxConnections open at once (one more is closed on arrival).
     */
    listener: z
      .object({
        headersTimeoutMs: ms.min(1).default(10_000),
        requestTimeoutMs: ms.min(1).default(30_000),
        maxConnections: z.number().int().min(1).default(1024),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type EmulatorOptionsInput = z.input<typeof emulatorOptionsSchema>;
export type EmulatorOptions = z.output<typeof emulatorOptionsSchema>;

export class EmulatorOptionsError extends PcdsError {
  override name = 'EmulatorOptionsError';
  constructor(message: string) {
    super('invalid_options', message);
  }
}

export function parseEmulatorOptions(input: unknown): EmulatorOptions {
  const r = emulatorOptionsSchema.safeParse(input ?? {});
  if (!r.success) {
    const lines = r.error.issues.map((i) =>
      i.code === 'unrecognized_keys'
        ? `${[...i.path, ...i.keys].join('.')} is not an option`
        : `${i.path.join('.') || '(options)'} ${i.message}`,
    );
    throw new EmulatorOptionsError(`invalid emulator options: ${lines.join('; ')}`);
  }
  return r.data;
}

export async function loadEmulatorOptionsFile(path: string): Promise<EmulatorOptionsInput> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new EmulatorOptionsError(
      `cannot read the config file ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
    );
  }
  try {
    return JSON.parse(text) as EmulatorOptionsInput;
  } catch {
    throw new EmulatorOptionsError(`the config file ${path} is not valid JSON`);
  }
}

// Configuration from PCDS_ environment variables, validated once at start. Secrets (API keys,
// webhook secrets) live only here and in the worker's dependencies, never in workflow data.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_MAX_ROW_BYTES, MAX_ROW_BYTES_LIMIT } from './batch/types.js';
import { encryptionEnvShape } from './codec/settings.js';
import { ConfigError } from './config-error.js';
import { tenantIdProblem } from './contract/tenant.js';
import { idSecretEnvShape } from './codec/idempotency.js';
import { MAX_TIME_SCALE, timeScaleProblem } from './contract/time-scale.js';
import {
  schedulingEnvShape,
  tenantSettings,
  type TenantSettings,
} from './throttle/scheduling-settings.js';

export { MAX_TIME_SCALE };

/** A time scale setting: times faster than the service, 1 to MAX_TIME_SCALE; 0.1 is refused with 10. */
const timeScale = () =>
  z.coerce
    .number()
    .superRefine((v, ctx) => {
      const problem = timeScaleProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .default(1);

/** A text setting where an empty value (as `docker compose` passes `${X:-}`) means unset. */
const optionalText = () =>
  z
    .string()
    .optional()
    .transform((v) => v || undefined);
const intFrom = (def: number) => z.coerce.number().int().positive().default(def);
const intUpTo = (def: number, max: number) =>
  z.coerce.number().int().positive().max(max, `at most ${max}`).default(def);

/** One service credential. `id` is a non-secret label shown to operators instead of the key. */
export const apiKeySchema = z.object({
  id: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'key id: letters, digits, _ . - only')
    .optional(),
  key: z.string().min(1),
  secret: z.string().min(1),
  perMinute: z.number().int().positive().optional(),
  perHour: z.number().int().positive().optional(),
});
export type ApiKeyConfig = z.infer<typeof apiKeySchema> & { id: string };

/**
 * Every PCDS_ setting the processes read, with its default and rules. docs/configuration.md lists
 * each one (a unit test holds the two together).
 */
export const envSchema = z.object({
  PCDS_BASE_URL: z.url().default('http://127.0.0.1:8787'),
  PCDS_API_KEY: z.string().optional(),
  PCDS_API_SECRET: z.string().optional(),
  /** A JSON array of {id, key, secret, perMinute, perHour}: the key pool. */
  PCDS_API_KEYS: z.string().optional(),
  PCDS_TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  PCDS_TEMPORAL_NAMESPACE: z.string().default('default'),
  /**
   * Reaching a secured Temporal (src/temporal/connection.ts): the client certificate and key for
   * mutual TLS, the server's CA, the name its certificate carries (each a file path or PEM text,
   * read at start), and a Temporal Cloud API key. Any of them turns TLS on; PCDS_TEMPORAL_TLS=true
   * turns it on alone (a publicly trusted server).
   */
  PCDS_TEMPORAL_TLS: z.preprocess((v) => (v === '' ? undefined : v), z.stringbool().optional()),
  PCDS_TEMPORAL_TLS_CERT: optionalText(),
  PCDS_TEMPORAL_TLS_KEY: optionalText(),
  PCDS_TEMPORAL_TLS_CA: optionalText(),
  PCDS_TEMPORAL_TLS_SERVER_NAME: optionalText(),
  PCDS_TEMPORAL_API_KEY: optionalText(),
  PCDS_TEMPORAL_UI_URL: z.string().default('http://127.0.0.1:8233'),
  PCDS_TASK_QUEUE: z.string().default('pcds'),
  /**
   * A workflow bundle written by `pcds worker --write-bundle <file>`: a worker loads it instead of
   * bundling its workflows at start (about 3 s of CPU). It must come from the same release.
   */
  PCDS_WORKFLOW_BUNDLE: optionalText(),
  /**
   * How far (percent) a worker's heap may grow past what its last full collection left before
   * the next one (worker/heap.ts): 50 keeps a worker's peak memory near what it holds. 0 leaves
   * V8's own factor (up to 4 times).
   */
  PCDS_WORKER_HEAP_GROWTH: z.coerce.number().int().min(0).max(300).default(50),
  PCDS_DATA_DIR: z.string().default('.data'),
  /**
   * Where batches keep their rows and results: postgres://user@host/db, or sqlite:/path (default:
   * the embedded file <PCDS_DATA_DIR>/store.sqlite).
   */
  PCDS_STORE_URL: z.string().optional(),
  /**
   * The result cache's default for batches and calls started here: on (a fresh cached result
   * answers a row or a call) or off (every row and call is sent). A run's own option wins.
   */
  PCDS_CACHE: z.enum(['on', 'off']).default('on'),
  /**
   * Whose result cache entries answer: `tenant` (each tenant its own; the operator's are the
   * deployment's entries from before tenants) or `shared` (one cache for every tenant, as the
   * operator chooses: another tenant's entry answers without its request id or time).
   */
  PCDS_CACHE_SCOPE: z.enum(['tenant', 'shared']).default('tenant'),
  /**
   * Who the CLI and the client work for (a tenant id: letters, digits, _ . -): its batch and
   * export ids, idempotency keys and cache entries are its own. Default the operator's `default`.
   */
  PCDS_TENANT: z
    .string()
    .default('default')
    .refine((t) => tenantIdProblem(t) === undefined, {
      message: 'a tenant id is 1-64 letters, digits, _ . or -, and not only dots',
    }),
  /** `pcds mcp`: the one folder its tools read and write in (default <PCDS_DATA_DIR>/files). */
  PCDS_MCP_FILES: z.string().min(1).optional(),
  PCDS_RATE_PER_MINUTE: intFrom(100),
  PCDS_RATE_PER_HOUR: intFrom(1000),
  /** off: skip the shared throttle (only for a service without limits, e.g. an emulator with limits off). */
  PCDS_THROTTLE: z.enum(['on', 'off']).default('on'),
  /**
   * How many times faster than the service the throttle's windows run: the emulator's time scale
   * (1 for the real service). Default: PCDS_TIME_SCALE.
   */
  PCDS_THROTTLE_TIME_SCALE: timeScale(),
  ...schedulingEnvShape,
  /**
   * How many times faster than the real service the clock runs (`pcds dev --time-scale`): 60 makes
   * a minute last a second. Only for the bundled emulator; it sets the defaults of every duration
   * below that follows the service's pace (see PACED_SETTINGS).
   */
  PCDS_TIME_SCALE: timeScale(),
  PCDS_HTTP_CONNECTIONS: intFrom(32),
  PCDS_HTTP_TIMEOUT_MS: intFrom(30_000),
  /** How calls over the MCP transport authenticate: the key pair's headers, or OAuth. */
  PCDS_MCP_AUTH: z.enum(['keys', 'oauth']).default('keys'),
  /** OAuth: the encrypted tokens file (default <PCDS_DATA_DIR>/mcp-tokens.enc). */
  PCDS_MCP_TOKENS_FILE: z.string().min(1).optional(),
  /** OAuth: the tokens file's key, 32 bytes in hex or base64 (default: a key file beside it). */
  PCDS_MCP_TOKEN_KEY: z.string().min(1).optional(),
  /**
   * `pcds mcp --transport http`: the bearer token callers present (id `default`); unset on
   * loopback, one is generated into <PCDS_DATA_DIR>/mcp-server-token.
   */
  PCDS_MCP_TOKEN: z.string().min(32, 'PCDS_MCP_TOKEN must be at least 32 characters').optional(),
  /** More callers, each with its own token and its own work: "id:token,id:token". */
  PCDS_MCP_TOKENS: z.string().optional(),
  /** Names beyond loopback and --host that the Host and Origin headers may give: "name[:port],...". */
  PCDS_MCP_ALLOWED_HOSTS: z.string().optional(),
  PCDS_POLL_INTERVAL_MS: intFrom(1_000),
  PCDS_MAX_WAIT_MS: intFrom(30 * 60_000),
  /** A batch input row longer than this fails with row_too_large (it is never carried whole). */
  PCDS_MAX_ROW_BYTES: intUpTo(DEFAULT_MAX_ROW_BYTES, MAX_ROW_BYTES_LIMIT),
  /**
   * A job result whose serialized size passes this fails its call with result_too_large (kept
   * well under Temporal's 2 MB payload limit; the result stays readable from the service).
   */
  PCDS_MAX_RESULT_BYTES: intUpTo(1024 * 1024, 1536 * 1024),
  PCDS_WEBHOOK_PUBLIC_URL: z.url().optional(),
  PCDS_WEBHOOK_SECRET: z
    .string()
    .min(16, 'PCDS_WEBHOOK_SECRET must be at least 16 characters')
    .optional(),
  PCDS_WEBHOOK_SECRET_ID: z
    .string()
    .regex(/^[A-Za-z0-9]{1,16}$/)
    .default('k1'),
  /** Older secrets still accepted while deliveries signed with them drain: "id:secret,id:secret". */
  PCDS_WEBHOOK_PREVIOUS_SECRETS: z.string().optional(),
  PCDS_WEBHOOK_PORT: z.coerce.number().int().min(0).max(65535).default(8788),
  PCDS_WEBHOOK_FALLBACK_POLL_MS: intFrom(60_000),
  /** How often a compact row waiting for its webhook looks for the delivery in the store. */
  PCDS_WEBHOOK_DELIVERY_CHECK_MS: intFrom(2_000),
  /** How long a callback URL is accepted after its call submitted the job. */
  PCDS_WEBHOOK_TOKEN_TTL_MS: intFrom(48 * 3_600_000),
  /** Address the webhook receiver listens on (it sits behind PCDS_WEBHOOK_PUBLIC_URL). */
  PCDS_WEBHOOK_HOST: z.string().min(1).default('0.0.0.0'),
  /** Development only: accept a loopback PCDS_WEBHOOK_PUBLIC_URL (the emulator's matching switch). */
  PCDS_WEBHOOK_ALLOW_LOOPBACK: z.stringbool().default(false),
  /** in-worker: each worker runs a receiver; standalone: one runs apart, with `pcds webhooks`. */
  PCDS_WEBHOOK_RECEIVER: z.enum(['in-worker', 'standalone']).default('in-worker'),
  /** The worker's Prometheus endpoint (/metrics); unset: no metrics server. */
  PCDS_METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** Loopback unless set: a scraper in another container or host needs e.g. 0.0.0.0. */
  PCDS_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** How often (at most) the worker reads GET /usage of a key that sent requests, for the credit gauges. */
  PCDS_METRICS_USAGE_INTERVAL_MS: intFrom(300_000),
  ...encryptionEnvShape,
  ...idSecretEnvShape,
  /**
   * Bounds of every HTTP listener the process opens (`pcds mcp` over HTTP, the webhook receiver,
   * the codec server, the metrics endpoint): headers complete within this, the whole request
   * within that, at most so many connections at once. Unset: each listener's default (see
   * src/http/listener-limits.ts; the receiver's deadlines are tighter).
   */
  PCDS_LISTEN_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().optional(),
  PCDS_LISTEN_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().optional(),
  PCDS_LISTEN_MAX_CONNECTIONS: z.coerce.number().int().positive().optional(),
  /** `pcds codec-server`: where it listens, its access token, the Web UI origin it serves. */
  PCDS_CODEC_SERVER_HOST: z.string().min(1).default('127.0.0.1'),
  PCDS_CODEC_SERVER_PORT: z.coerce.number().int().min(0).max(65535).default(8789),
  PCDS_CODEC_SERVER_TOKEN: z
    .string()
    .min(16, 'PCDS_CODEC_SERVER_TOKEN must be at least 16 characters')
    .optional(),
  /** Default: the origin of PCDS_TEMPORAL_UI_URL. */
  PCDS_CODEC_SERVER_ORIGIN: z.url().optional(),
});

export type Env = z.infer<typeof envSchema>;

export interface Config extends Env {
  keys: ApiKeyConfig[];
  /** How the throttles schedule: reserve, tenants' weights and budgets (pool-wide). */
  scheduling: TenantSettings;
}

/** A label for a key that reveals nothing about it. */
export function keyLabel(key: string): string {
  return 'key-' + createHash('sha256').update(key).digest('hex').slice(0, 8);
}

export { ConfigError };

/**
 * The durations that follow the service's pace: with PCDS_TIME_SCALE, their defaults are divided
 * by it (a value set explicitly is taken as given). HTTP timeouts are not among them: the network
 * does not run faster.
 */
export const PACED_SETTINGS = [
  'PCDS_POLL_INTERVAL_MS',
  'PCDS_MAX_WAIT_MS',
  'PCDS_WEBHOOK_FALLBACK_POLL_MS',
  'PCDS_WEBHOOK_DELIVERY_CHECK_MS',
  'PCDS_WEBHOOK_TOKEN_TTL_MS',
  'PCDS_METRICS_USAGE_INTERVAL_MS',
] as const;

const isLoopbackUrl = (url: string) =>
  ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname) ||
  /^127\./.test(new URL(url).hostname);

/**
 * What an estimate or a banner says about the pace it runs at: undefined at the real service's
 * pace, else e.g. "not the real service's pace (emulator at 60x, rate limits off)".
 */
export function paceNote(
  config: Pick<Config, 'PCDS_TIME_SCALE' | 'PCDS_THROTTLE'>,
): string | undefined {
  const parts = [
    config.PCDS_TIME_SCALE !== 1 ? `emulator at ${config.PCDS_TIME_SCALE}x` : undefined,
    config.PCDS_THROTTLE === 'off' ? 'rate limits off' : undefined,
  ].filter((p): p is string => p !== undefined);
  return parts.length ? `not the real service's pace (${parts.join(', ')})` : undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const e = parsed.data;
  if (e.PCDS_TIME_SCALE !== 1) {
    // A faster clock against the real service would break its limits and fail its jobs early.
    if (!isLoopbackUrl(e.PCDS_BASE_URL))
      throw new ConfigError(
        'PCDS_TIME_SCALE is only for the bundled emulator: PCDS_BASE_URL must be a loopback address (unset PCDS_TIME_SCALE for the real service)',
      );
    for (const name of PACED_SETTINGS)
      if (!env[name]) e[name] = Math.max(1, Math.round(e[name] / e.PCDS_TIME_SCALE));
    if (!env.PCDS_THROTTLE_TIME_SCALE) e.PCDS_THROTTLE_TIME_SCALE = e.PCDS_TIME_SCALE;
  }
  if (!e.PCDS_TEMPORAL_TLS_CERT !== !e.PCDS_TEMPORAL_TLS_KEY)
    throw new ConfigError(
      'PCDS_TEMPORAL_TLS_CERT and PCDS_TEMPORAL_TLS_KEY go together: set both (the client certificate and its key)',
    );
  if (
    e.PCDS_TEMPORAL_TLS === false &&
    (e.PCDS_TEMPORAL_API_KEY || e.PCDS_TEMPORAL_TLS_CERT || e.PCDS_TEMPORAL_TLS_CA)
  )
    throw new ConfigError(
      'PCDS_TEMPORAL_TLS=false, yet a PCDS_TEMPORAL_TLS_* setting or PCDS_TEMPORAL_API_KEY is set: certificates and API keys go over TLS only',
    );
  const keys: ApiKeyConfig[] = [];
  if (e.PCDS_API_KEYS) {
    let raw: unknown;
    try {
      raw = JSON.parse(e.PCDS_API_KEYS);
    } catch {
      throw new ConfigError('PCDS_API_KEYS must be a JSON array of {id, key, secret}');
    }
    const list = z.array(apiKeySchema).min(1).safeParse(raw);
    if (!list.success) {
      // Never echo the values: they are secrets.
      throw new ConfigError(
        `PCDS_API_KEYS: ${list.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`,
      );
    }
    for (const k of list.data) keys.push({ ...k, id: k.id ?? keyLabel(k.key) });
  }
  if (e.PCDS_API_KEY || e.PCDS_API_SECRET) {
    if (!e.PCDS_API_KEY || !e.PCDS_API_SECRET) {
      throw new ConfigError('PCDS_API_KEY and PCDS_API_SECRET go together: set both');
    }
    if (!keys.some((k) => k.key === e.PCDS_API_KEY)) {
      keys.unshift({ id: 'default', key: e.PCDS_API_KEY, secret: e.PCDS_API_SECRET });
    }
  }
  const ids = new Set<string>();
  for (const k of keys) {
    if (ids.has(k.id)) throw new ConfigError(`key id "${k.id}" is used twice`);
    ids.add(k.id);
  }
  const poolPerHour = keys.reduce((a, k) => a + (k.perHour ?? e.PCDS_RATE_PER_HOUR), 0);
  const scheduling = tenantSettings(e, poolPerHour || e.PCDS_RATE_PER_HOUR);
  return { ...e, keys, scheduling };
}

/** The listener bounds the configuration sets (PCDS_LISTEN_*); a listener's defaults fill the rest. */
export function configuredListenerLimits(
  config: Pick<
    Config,
    | 'PCDS_LISTEN_HEADERS_TIMEOUT_MS'
    | 'PCDS_LISTEN_REQUEST_TIMEOUT_MS'
    | 'PCDS_LISTEN_MAX_CONNECTIONS'
  >,
): { headersMs?: number; requestMs?: number; maxConnections?: number } {
  return {
    ...(config.PCDS_LISTEN_HEADERS_TIMEOUT_MS !== undefined
      ? { headersMs: config.PCDS_LISTEN_HEADERS_TIMEOUT_MS }
      : {}),
    ...(config.PCDS_LISTEN_REQUEST_TIMEOUT_MS !== undefined
      ? { requestMs: config.PCDS_LISTEN_REQUEST_TIMEOUT_MS }
      : {}),
    ...(config.PCDS_LISTEN_MAX_CONNECTIONS !== undefined
      ? { maxConnections: config.PCDS_LISTEN_MAX_CONNECTIONS }
      : {}),
  };
}

export function requireKeys(config: Config): ApiKeyConfig[] {
  if (config.keys.length === 0) {
    throw new ConfigError(
      'no API key configured: set PCDS_API_KEY and PCDS_API_SECRET (or PCDS_API_KEYS for a pool)',
    );
  }
  return config.keys;
}

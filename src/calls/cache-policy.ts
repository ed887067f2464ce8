// How long a cached result serves, and how a call or a batch uses the cache. Pure: the store,
// the CLI, the client, the activities and the call workflow share it.
import { OPERATOR_TENANT } from '../contract/tenant.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * How a batch or a call uses the result cache.
 * - use: a fresh entry answers the row (no request, no credit); what is fetched fills the cache.
 * - refresh: every row is fetched again, and what is fetched replaces the entry.
 * - off: the cache is neither read nor filled.
 * maxAgeMs: an entry fetched longer ago than this does not answer (on top of its time to live).
 * tenant: whose run it is (absent: the operator's); its lookups are its own unless `shared`.
 * shared: the deployment shares one cache (PCDS_CACHE_SCOPE=shared): an entry another tenant
 *   fetched answers too, without that tenant's request id or time.
 */
export interface CacheUse {
  mode: 'use' | 'refresh' | 'off';
  maxAgeMs?: number;
  tenant?: string;
  shared?: true;
}

/**
 * Where a deployment's result cache answers from (PCDS_CACHE_SCOPE): `tenant`, each tenant's own
 * entries (the operator's are the deployment's entries from before tenants); `shared`, one set for
 * every tenant, as the operator chose.
 */
export type CacheScope = 'tenant' | 'shared';
export const CACHE_SCOPES = ['tenant', 'shared'] as const satisfies readonly CacheScope[];

export const cacheScopeOf = (setting: string | undefined): CacheScope =>
  setting === 'shared' ? 'shared' : 'tenant';

/** A run's cache use with its tenant and the deployment's scope. */
export function scopedCacheUse(use: CacheUse, tenant: string, scope: CacheScope): CacheUse {
  const { tenant: _tenant, shared: _shared, ...rest } = use;
  return {
    ...rest,
    ...(tenant !== OPERATOR_TENANT ? { tenant } : {}),
    ...(scope === 'shared' ? { shared: true as const } : {}),
  };
}

/**
 * The namespace of a run's lookups: its tenant's own, or none (the operator's entries, or the
 * deployment's shared ones).
 */
export const cacheNamespaceOf = (use: CacheUse | undefined): string | undefined =>
  use?.shared || use?.tenant === undefined || use.tenant === OPERATOR_TENANT
    ? undefined
    : use.tenant;

/** The tenant a run fetches for, as its entries record it. */
export const cacheTenantOf = (use: CacheUse | undefined): string => use?.tenant ?? OPERATOR_TENANT;

/**
 * Whether an entry's request id and fetch time may be shown to a run: only to the tenant whose
 * request fetched it (entries from before tenants are the operator's).
 */
export const showsProvenance = (entryScope: string | null, use: CacheUse | undefined): boolean =>
  (entryScope ?? OPERATOR_TENANT) === cacheTenantOf(use);

export const CACHE_DEFAULT: CacheUse = { mode: 'use' };

/** The default of a deployment's PCDS_CACHE setting (on unless it says off). */
export const cacheDefaultOf = (setting: string | undefined): CacheUse =>
  setting === 'off' ? { mode: 'off' } : CACHE_DEFAULT;

/**
 * How a call or a batch started by the typed client uses the cache (see the client's
 * CacheOption docs): `{}` or `{ maxAge }` (ms or "7d") to use it, 'refresh', or false (off).
 */
export type CacheOption = { maxAge?: number | string } | 'refresh' | false;

/** How long a found and an empty result of an endpoint serve; absent: the endpoint is not cached. */
export interface CacheTtl {
  foundMs: number;
  emptyMs: number;
}

/**
 * Defaults per endpoint. Profiles change slowly; a newsfeed and an answer about a person go
 * stale within days. An empty result (no match) is kept shorter: the person may appear. A
 * person search is not cached: its pages are read by offset from one job, and a cached page
 * would not continue.
 */
export const CACHE_TTL: Readonly<Record<string, CacheTtl>> = {
  person_enrichment: { foundMs: 30 * DAY, emptyMs: 7 * DAY },
  person_enrich: { foundMs: 30 * DAY, emptyMs: 7 * DAY },
  person_lookup_fields: { foundMs: 30 * DAY, emptyMs: 7 * DAY },
  company_enrichment: { foundMs: 30 * DAY, emptyMs: 7 * DAY },
  company_search: { foundMs: 7 * DAY, emptyMs: 1 * DAY },
  person_newsfeed: { foundMs: 1 * DAY, emptyMs: 6 * HOUR },
  person_ask: { foundMs: 1 * DAY, emptyMs: 6 * HOUR },
};

export const cacheTtlOf = (endpoint: string): CacheTtl | undefined => CACHE_TTL[endpoint];

/** Whether a run reads the cache for this endpoint. */
export const readsCache = (endpoint: string, use: CacheUse | undefined): boolean =>
  use?.mode === 'use' && cacheTtlOf(endpoint) !== undefined;

/** Whether what a run fetches for this endpoint goes into the cache. */
export const fillsCache = (endpoint: string, use: CacheUse | undefined): boolean =>
  (use?.mode === 'use' || use?.mode === 'refresh') && cacheTtlOf(endpoint) !== undefined;

/** The oldest fetch time (epoch ms) an entry may have to answer a run at `nowMs`. */
export const freshSince = (use: CacheUse | undefined, nowMs: number): number =>
  use?.maxAgeMs !== undefined ? nowMs - use.maxAgeMs : Number.NEGATIVE_INFINITY;

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: HOUR, d: DAY, w: 7 * DAY };

/** "7d", "12h", "30m", "90s", "2w" (or a bare number of seconds) in milliseconds. */
export function parseAge(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$/i.exec(text);
  if (!m) throw new Error(`not a duration: use a number and s, m, h, d or w (7d, 12h)`);
  return Math.round(Number(m[1]) * UNITS[(m[2] || 's').toLowerCase()]);
}

/** A run's cache options as the CLI and the client give them, in one policy. */
export function cacheUseOf(
  opts: { noCache?: boolean; refresh?: boolean; maxAgeMs?: number },
  /** What applies when no option is given (the deployment's PCDS_CACHE). */
  fallback: CacheUse = CACHE_DEFAULT,
): CacheUse {
  if (opts.noCache && opts.refresh)
    throw new Error('choose one of --no-cache and --refresh: one skips the cache, one renews it');
  if (opts.noCache) return { mode: 'off' };
  if (opts.refresh) return { mode: 'refresh' };
  if (opts.maxAgeMs !== undefined) return { mode: 'use', maxAgeMs: opts.maxAgeMs };
  return fallback;
}

// `pcds cache stats|purge`: what the result cache in the store holds per endpoint, and removing
// entries: by endpoint, age or expiry, or everything. `--email`/`--url` are an erasure request
// (`pcds erase`), which reaches batch rows and results too.
import { Command } from 'commander';
import { loadConfig } from '../config.js';
import { findEndpoint } from '../contract/index.js';
import { CACHE_TTL, parseAge, type CacheTtl } from '../calls/cache-policy.js';
import { openStoreFromSettings } from '../store/index.js';
import { ResultCache } from '../store/result-cache.js';
import type { CacheStats, CacheUpkeep, PurgeRequest } from '../store/roles.js';
import { erasureIdentifiersOf, runErasure } from './erase.js';
import { action, printJson, UsageError } from './output.js';

const CACHED = Object.keys(CACHE_TTL);

/** 30d, 6h, 90m, 45s: the largest unit that divides the duration. */
export function formatAge(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
  ] as const)
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${Math.round(ms / 1000)}s`;
}

const iso = (ms: number | undefined) => (ms !== undefined ? new Date(ms).toISOString() : undefined);

/** A cached endpoint's name from what the operator typed (name, path or dashed); never echoed when unknown. */
export function cachedEndpointOf(given: string): string {
  const list = CACHED.join(', ');
  const endpoint = findEndpoint(given);
  if (!endpoint) throw new UsageError(`--endpoint: no such endpoint; cached endpoints: ${list}`);
  if (!CACHE_TTL[endpoint.name])
    throw new UsageError(
      `--endpoint: ${endpoint.name} is not cached, so it has no entries; cached endpoints: ${list}`,
    );
  return endpoint.name;
}

export interface PurgeFlags {
  endpoint?: string;
  olderThan?: string;
  expired?: boolean;
  email?: string;
  url?: string;
  all?: boolean;
  yes?: boolean;
  json?: boolean;
}

/** The purge the flags ask for; refused with no condition unless --all (with --yes). */
export function purgeRequestOf(o: PurgeFlags): PurgeRequest {
  const req: PurgeRequest = {};
  if (o.endpoint !== undefined) req.endpoint = cachedEndpointOf(o.endpoint);
  if (o.olderThan !== undefined) {
    try {
      req.olderThanMs = parseAge(o.olderThan);
    } catch (err) {
      throw new UsageError(`--older-than: ${(err as Error).message}`);
    }
  }
  if (o.expired) req.expired = true;
  const conditions = Object.keys(req).length;
  if (o.all && conditions > 0)
    throw new UsageError('--all removes every entry: give it alone, or give conditions instead');
  if (!o.all && conditions === 0)
    throw new UsageError(
      'say what to remove: --endpoint, --older-than or --expired (or --all --yes for every entry); --email or --url erase a person',
    );
  if (o.all && !o.yes)
    throw new UsageError('--all removes every cached result: add --yes to confirm');
  return req;
}

interface StatsRow extends Omit<CacheStats, 'oldestFetchedAt' | 'newestFetchedAt'> {
  oldestFetchedAt?: string;
  newestFetchedAt?: string;
  ttl?: { found: string; empty: string; foundMs: number; emptyMs: number };
}

/** Every cached endpoint (with no entries too), then any other endpoint the table holds. */
export function statsRows(stats: readonly CacheStats[]): StatsRow[] {
  const byEndpoint = new Map(stats.map((s) => [s.endpoint, s]));
  const names = [...CACHED, ...stats.map((s) => s.endpoint).filter((e) => !CACHE_TTL[e])];
  return names.map((endpoint) => {
    const s = byEndpoint.get(endpoint);
    const ttl: CacheTtl | undefined = CACHE_TTL[endpoint];
    return {
      endpoint,
      entries: s?.entries ?? 0,
      found: s?.found ?? 0,
      empty: s?.empty ?? 0,
      expired: s?.expired ?? 0,
      hits: s?.hits ?? 0,
      ...(s?.oldestFetchedAt !== undefined ? { oldestFetchedAt: iso(s.oldestFetchedAt) } : {}),
      ...(s?.newestFetchedAt !== undefined ? { newestFetchedAt: iso(s.newestFetchedAt) } : {}),
      ...(ttl
        ? {
            ttl: {
              found: formatAge(ttl.foundMs),
              empty: formatAge(ttl.emptyMs),
              foundMs: ttl.foundMs,
              emptyMs: ttl.emptyMs,
            },
          }
        : {}),
    };
  });
}

/** The table people read: one line per endpoint, then the totals. */
export function statsTable(store: string, rows: readonly StatsRow[]): string {
  const head = [
    'endpoint',
    'entries',
    'found',
    'empty',
    'expired',
    'hits',
    'ttl found/empty',
    'oldest fetch',
    'newest fetch',
  ];
  const cells = rows.map((r) => [
    r.endpoint,
    String(r.entries),
    String(r.found),
    String(r.empty),
    String(r.expired),
    String(r.hits),
    r.ttl ? `${r.ttl.found} / ${r.ttl.empty}` : 'not cached',
    r.oldestFetchedAt ?? '-',
    r.newestFetchedAt ?? '-',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const numeric = (i: number) => i >= 1 && i <= 5;
  const line = (c: string[]) =>
    c
      .map((v, i) => (numeric(i) ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const total = (k: 'entries' | 'expired' | 'hits') => rows.reduce((n, r) => n + r[k], 0);
  return [
    `store: ${store}`,
    line(head),
    ...cells.map(line),
    `${total('entries')} entries, ${total('expired')} past their time to live (workers sweep them hourly; pcds cache purge --expired now), ${total('hits')} hits`,
    'person_search is not cached: its pages are read by offset from one job',
  ].join('\n');
}

async function withCache<T>(fn: (cache: CacheUpkeep, shown: string) => Promise<T>): Promise<T> {
  const store = await openStoreFromSettings(loadConfig());
  try {
    return await fn(new ResultCache(store), store.location.shown);
  } finally {
    await store.close();
  }
}

export function registerCacheCommand(program: Command): Command {
  const cmd = program
    .command('cache')
    .description('the result cache in the store: what it holds, and removing entries');
  cmd
    .command('stats')
    .description(
      'per endpoint: entries (found, empty), past their time to live, hits, oldest and newest fetch, and the times to live',
    )
    .option('--json', 'print them as JSON')
    .action(
      action(async (o: { json?: boolean }) => {
        await withCache(async (cache, shown) => {
          const rows = statsRows(await cache.stats());
          if (o.json) return printJson({ store: shown, endpoints: rows });
          process.stdout.write(`${statsTable(shown, rows)}\n`);
        });
      }),
    );
  cmd
    .command('purge')
    .description(
      'remove the entries that match every condition given; --email/--url erase a person from the whole store (pcds erase)',
    )
    .option('--endpoint <name>', 'only this endpoint')
    .option('--older-than <age>', 'fetched longer ago than this (7d, 12h, 30m)')
    .option('--expired', 'past their time to live (what the workers sweep hourly)')
    .option(
      '--email <address>',
      'erase the person with this email address from the whole store (as pcds erase --email)',
    )
    .option(
      '--url <url>',
      'erase the person with this URL from the whole store (as pcds erase --url)',
    )
    .option('--all', 'every entry (with --yes)')
    .option('--yes', 'confirm --all')
    .option('--json', 'print {removed} as JSON (an erasure: its report)')
    .action(
      action(async (o: PurgeFlags) => {
        // A person's erasure reaches more than the cache: it is `pcds erase`, whole.
        if (o.email !== undefined || o.url !== undefined) {
          const { email, url, json, ...rest } = o;
          if (Object.values(rest).some((v) => v !== undefined))
            throw new UsageError(
              '--email and --url erase a person from the whole store: give them without other conditions',
            );
          const identifiers = erasureIdentifiersOf({
            ...(email !== undefined ? { email: [email] } : {}),
            ...(url !== undefined ? { url: [url] } : {}),
          });
          return runErasure(identifiers, json ? { json } : {});
        }
        const req = purgeRequestOf(o);
        // --expired alone is the workers' sweep by hand (also dropping stale single-call records).
        const sweepOnly = Object.keys(req).length === 1 && req.expired === true;
        const removed = await withCache(async (cache) =>
          sweepOnly ? (await cache.sweep()).expired : cache.purge(req),
        );
        if (o.json) return printJson({ removed });
        process.stdout.write(`removed ${removed} cache ${removed === 1 ? 'entry' : 'entries'}\n`);
      }),
    );
  return cmd;
}

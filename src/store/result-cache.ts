// The result cache: one found or empty result per lookup (the endpoint and the normalised
// parameters, keyed HMAC, as duplicate detection keys a batch's rows), shared by every batch and
// call that uses the same store. A hit costs no request, no permit and no credit. Failures are
// never cached. Results are sealed like the rest of the store; subjects (keyed HMACs of the
// identifiers a request and its result name) let an erasure find a person's entries (erasure.ts).
import type { Kysely } from 'kysely';
import {
  cacheNamespaceOf,
  cacheTenantOf,
  cacheTtlOf,
  fillsCache,
  freshSince,
  readsCache,
  showsProvenance,
  type CacheUse,
} from '../calls/cache-policy.js';
import type { Store } from './open.js';
import type { CachedResult, CacheStats, PurgeRequest, ResultCacheRoles } from './roles.js';
import { mergedSubjects, type Sealer } from './sealer.js';
import type { StoreSchema } from './schema.js';

/**
 * The lookup of a run's parameters in its scope: the tenant's own when the cache is kept per
 * tenant (PCDS_CACHE_SCOPE=tenant), the deployment's for the operator and for a shared cache.
 */
export function cacheLookup(
  seal: Pick<Sealer, 'lookup'>,
  endpoint: string,
  params: Record<string, unknown>,
  use: CacheUse | undefined,
): string {
  const namespace = cacheNamespaceOf(use);
  // No endpoint name holds a NUL: a tenant's lookups never equal the deployment's.
  return seal.lookup(
    namespace === undefined ? endpoint : `${endpoint}\0tenant\0${namespace}`,
    params,
  );
}

/** What an entry records of the lookup and the request that fetched it at `nowMs`. */
interface CacheEntryFacts {
  lookup: string;
  endpoint: string;
  subjects: string | null;
  outcome: 'found' | 'empty';
  requestId: string;
  status: string;
  nowMs: number;
  /** The tenant whose request fetched it. */
  scope: string;
}

/**
 * Puts (or replaces) the entry of a lookup fetched at `nowMs`, its result already sealed; its
 * time to live is the endpoint's for its outcome (an endpoint not cached puts nothing).
 */
export async function putCacheEntry(
  db: Kysely<StoreSchema>,
  e: CacheEntryFacts & { sealedResult: string | null },
): Promise<void> {
  const ttl = cacheTtlOf(e.endpoint);
  if (!ttl) return;
  const row = {
    lookup: e.lookup,
    endpoint: e.endpoint,
    outcome: e.outcome,
    request_id: e.requestId,
    status: e.status,
    result: e.outcome === 'found' ? e.sealedResult : null,
    subjects: e.subjects,
    fetched_at: e.nowMs,
    expires_at: e.nowMs + (e.outcome === 'found' ? ttl.foundMs : ttl.emptyMs),
    hits: 0,
    scope: e.scope,
  };
  const { lookup: _l, endpoint: _e, hits: _h, ...renewed } = row;
  await db
    .insertInto('pcds_cache')
    .values(row)
    .onConflict((oc) => oc.column('lookup').doUpdateSet(renewed))
    .execute();
}

/** Pending single-call jobs older than this are dropped by the sweep: their poll never came. */
const PENDING_KEPT_MS = 7 * 24 * 3_600_000;

/** Every role of the result cache (roles.ts), over Kysely for SQLite and PostgreSQL alike. */
export class ResultCache implements ResultCacheRoles {
  private readonly db: Kysely<StoreSchema>;

  constructor(private readonly store: Store) {
    this.db = store.db;
  }

  private get seal() {
    return this.store.sealer;
  }

  /** The fresh entry for a call's parameters, or undefined; a hit is counted on the entry. */
  async get(
    endpoint: string,
    params: Record<string, unknown>,
    use: CacheUse | undefined,
    nowMs = Date.now(),
  ): Promise<CachedResult | undefined> {
    if (!readsCache(endpoint, use)) return undefined;
    const lookup = cacheLookup(this.seal, endpoint, params, use);
    const hit = await this.db
      .selectFrom('pcds_cache')
      .selectAll()
      .where('lookup', '=', lookup)
      .where('expires_at', '>', nowMs)
      .executeTakeFirst();
    if (!hit || Number(hit.fetched_at) < freshSince(use, nowMs)) return undefined;
    await this.db
      .updateTable('pcds_cache')
      .set((eb) => ({ hits: eb('hits', '+', 1) }))
      .where('lookup', '=', lookup)
      .execute();
    return {
      outcome: hit.outcome,
      status: hit.status ?? 'completed',
      ...(hit.result !== null ? { result: this.seal.open(hit.result) } : {}),
      ...(showsProvenance(hit.scope, use)
        ? { requestId: hit.request_id, fetchedAt: Number(hit.fetched_at) }
        : {}),
    };
  }

  /** Remembers a single call's accepted job, so the poll that reads its result fills the cache. */
  async expect(
    requestId: string,
    endpoint: string,
    params: Record<string, unknown>,
    use: CacheUse | undefined,
    nowMs = Date.now(),
  ): Promise<void> {
    if (!fillsCache(endpoint, use)) return;
    await this.db
      .insertInto('pcds_cache_pending')
      .values({
        request_id: requestId,
        lookup: cacheLookup(this.seal, endpoint, params, use),
        endpoint,
        subjects: this.seal.subjects(params),
        created_at: nowMs,
        scope: cacheTenantOf(use),
      })
      .onConflict((oc) => oc.column('request_id').doNothing())
      .execute();
  }

  /** A job's result was read: fills the cache if a call expected it (else does nothing). */
  async fill(
    requestId: string,
    got: { outcome: 'found' | 'empty'; status: string; result?: unknown },
    nowMs = Date.now(),
  ): Promise<void> {
    const pending = await this.db
      .selectFrom('pcds_cache_pending')
      .selectAll()
      .where('request_id', '=', requestId)
      .executeTakeFirst();
    if (!pending) return;
    await this.db.transaction().execute(async (tx) => {
      await this.upsert(tx, {
        lookup: pending.lookup,
        endpoint: pending.endpoint,
        // Whom the request named, and whom the result names.
        subjects: mergedSubjects(pending.subjects, this.seal.subjects(got.result)),
        requestId,
        ...got,
        nowMs,
        scope: pending.scope ?? cacheTenantOf(undefined),
      });
      await tx.deleteFrom('pcds_cache_pending').where('request_id', '=', requestId).execute();
    });
  }

  /** Puts a result fetched now for these parameters (a job that completed at its submit). */
  async put(
    endpoint: string,
    params: Record<string, unknown>,
    use: CacheUse | undefined,
    got: { outcome: 'found' | 'empty'; requestId: string; status: string; result?: unknown },
    nowMs = Date.now(),
  ): Promise<void> {
    if (!fillsCache(endpoint, use)) return;
    await this.upsert(this.db, {
      lookup: cacheLookup(this.seal, endpoint, params, use),
      endpoint,
      subjects: this.seal.subjects(params, got.result),
      ...got,
      nowMs,
      scope: cacheTenantOf(use),
    });
  }

  private async upsert(
    db: Kysely<StoreSchema>,
    e: CacheEntryFacts & { result?: unknown },
  ): Promise<void> {
    const { result, ...rest } = e;
    await putCacheEntry(db, {
      ...rest,
      sealedResult: e.outcome === 'found' ? this.seal.seal(result) : null,
    });
  }

  /**
   * How many of a loaded batch's rows a run started now would answer from the cache, and how
   * many of those were found (credits saved). Rows that share a call count once.
   */
  async expectedHits(
    batchId: string,
    use: CacheUse | undefined,
    nowMs = Date.now(),
  ): Promise<{ rows: number; found: number }> {
    const batch = await this.db
      .selectFrom('pcds_batches')
      .select('endpoint')
      .where('batch_id', '=', batchId)
      .executeTakeFirst();
    if (!batch || !readsCache(batch.endpoint, use)) return { rows: 0, found: 0 };
    const since = freshSince(use, nowMs);
    const got = await this.db
      .selectFrom('pcds_rows as r')
      .innerJoin('pcds_cache as c', 'c.lookup', 'r.lookup')
      .select((eb) => [
        eb.fn.countAll<number>().as('rows'),
        eb.fn
          .sum<number>(eb.case().when('c.outcome', '=', 'found').then(1).else(0).end())
          .as('found'),
      ])
      .where('r.batch_id', '=', batchId)
      .where('r.duplicate_of', 'is', null)
      .where('c.expires_at', '>', nowMs)
      .$if(Number.isFinite(since), (q) => q.where('c.fetched_at', '>=', since))
      .executeTakeFirstOrThrow();
    return { rows: Number(got.rows ?? 0), found: Number(got.found ?? 0) };
  }

  /**
   * How many of these parameter sets (one per row that would be sent) a run at `nowMs` would
   * answer from the cache, and how many of those were found: a plan's expected hits.
   */
  async hitsAmong(
    endpoint: string,
    paramSets: readonly Record<string, unknown>[],
    use: CacheUse | undefined,
    nowMs = Date.now(),
  ): Promise<{ rows: number; found: number }> {
    if (!readsCache(endpoint, use) || paramSets.length === 0) return { rows: 0, found: 0 };
    const lookups = paramSets.map((p) => cacheLookup(this.seal, endpoint, p, use));
    const since = freshSince(use, nowMs);
    const outcomes = new Map<string, 'found' | 'empty'>();
    const distinct = [...new Set(lookups)];
    for (let i = 0; i < distinct.length; i += 500) {
      const got = await this.db
        .selectFrom('pcds_cache')
        .select(['lookup', 'outcome'])
        .where('lookup', 'in', distinct.slice(i, i + 500))
        .where('expires_at', '>', nowMs)
        .$if(Number.isFinite(since), (q) => q.where('fetched_at', '>=', since))
        .execute();
      for (const g of got) outcomes.set(g.lookup, g.outcome);
    }
    let rows = 0;
    let found = 0;
    for (const l of lookups) {
      const o = outcomes.get(l);
      if (o) rows += 1;
      if (o === 'found') found += 1;
    }
    return { rows, found };
  }

  /** Entries per endpoint: found, empty, past their time to live, hits, oldest and newest. */
  async stats(nowMs = Date.now()): Promise<CacheStats[]> {
    const got = await this.db
      .selectFrom('pcds_cache')
      .select((eb) => [
        'endpoint',
        eb.fn.countAll<number>().as('entries'),
        eb.fn
          .sum<number>(eb.case().when('outcome', '=', 'found').then(1).else(0).end())
          .as('found'),
        eb.fn
          .sum<number>(eb.case().when('expires_at', '<=', nowMs).then(1).else(0).end())
          .as('expired'),
        eb.fn.sum<number>('hits').as('hits'),
        eb.fn.min<number>('fetched_at').as('oldest'),
        eb.fn.max<number>('fetched_at').as('newest'),
      ])
      .groupBy('endpoint')
      .orderBy('endpoint')
      .execute();
    return got.map((g) => ({
      endpoint: g.endpoint,
      entries: Number(g.entries),
      found: Number(g.found ?? 0),
      empty: Number(g.entries) - Number(g.found ?? 0),
      expired: Number(g.expired ?? 0),
      hits: Number(g.hits ?? 0),
      ...(g.oldest !== null ? { oldestFetchedAt: Number(g.oldest) } : {}),
      ...(g.newest !== null ? { newestFetchedAt: Number(g.newest) } : {}),
    }));
  }

  /**
   * Removes the entries that match every given condition (none given: every entry). Erasing what
   * the store holds on a person is erasure.ts's: it reaches batch rows and results too.
   */
  async purge(req: PurgeRequest, nowMs = Date.now()): Promise<number> {
    const res = await this.db
      .deleteFrom('pcds_cache')
      .$if(req.endpoint !== undefined, (q) => q.where('endpoint', '=', req.endpoint!))
      .$if(req.olderThanMs !== undefined, (q) =>
        q.where('fetched_at', '<', nowMs - req.olderThanMs!),
      )
      .$if(req.expired === true, (q) => q.where('expires_at', '<=', nowMs))
      .executeTakeFirst();
    return Number(res.numDeletedRows ?? 0);
  }

  /** Drops entries past their time to live and single-call jobs whose poll never came. */
  async sweep(nowMs = Date.now()): Promise<{ expired: number }> {
    const res = await this.db
      .deleteFrom('pcds_cache')
      .where('expires_at', '<=', nowMs)
      .executeTakeFirst();
    await this.db
      .deleteFrom('pcds_cache_pending')
      .where('created_at', '<', nowMs - PENDING_KEPT_MS)
      .execute();
    return { expired: Number(res.numDeletedRows ?? 0) };
  }
}

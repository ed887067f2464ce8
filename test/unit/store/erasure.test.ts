// An erasure request on the embedded store: what names the person by any identifier the store
// can derive (her email; her profile URL, name at her company and phone number, taken from her
// profiles it holds; an email quoted in a question) goes, from the cache, the pending calls, batch
// rows and results and waiting deliveries, and a raw scan of the SQLite file and its WAL finds
// neither her values nor the sealed text that held them. Another person's data stays.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ResultLine } from '../../../src/batch/types.js';
import { BatchStore, type Store } from '../../../src/store/index.js';
import { eraseFromStore } from '../../../src/store/erasure.js';
import { identifiersOf, requestedIdentifiers } from '../../../src/store/person-identifiers.js';
import { ResultCache } from '../../../src/store/result-cache.js';
import { randomBytes } from 'node:crypto';
import { createSealer, openStore } from '../../../src/store/index.js';
import { tempStore } from './temp-store.js';

/** A store that keeps values in clear (PCDS_ENCRYPTION=off), its lookups keyed all the same. */
const opened: Store[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});
async function clearStore(dir: string): Promise<Store> {
  const store = await openStore({
    url: `sqlite:${join(dir, 'store.sqlite')}`,
    dataDir: dir,
    sealer: createSealer(undefined, { key: randomBytes(32) }),
  });
  opened.push(store);
  return store;
}

const USE = { mode: 'use' } as const;
const ADA = {
  email: 'ada.lovelace@analytical.example',
  personal: 'countess.lovelace@mail.example',
  url: 'https://www.linkedin.com/in/ada-lovelace-1815/',
  phone: '+44 20 7946 0958',
  name: 'Augusta Ada Lovelace',
  company: 'Analytical Engines Ltd',
};
const adaProfile = {
  displayname: ADA.name,
  headline: 'Enchantress of numbers',
  best_business_email: ADA.email,
  altemails: [ADA.personal],
  fullphone: [{ fullphone: ADA.phone, phone_type: 'mobile' }],
  social_profiles: { linkedin: { url: ADA.url, followers: 1815 } },
  organizations: [{ name: ADA.company, title: 'Analyst', is_current: true }],
};
const GRACE = { email: 'grace.hopper@navy.example', name: 'Grace Hopper' };
const graceProfile = {
  displayname: GRACE.name,
  best_business_email: GRACE.email,
  organizations: [{ name: 'US Navy' }],
};
// What an erasure must leave no trace of, and what must stay.
const ADA_VALUES = [
  'ada.lovelace',
  'countess.lovelace',
  'ada-lovelace-1815',
  'Augusta Ada',
  'Enchantress',
  '7946',
];

const found = (requestId: string, result: unknown) => ({
  outcome: 'found' as const,
  requestId,
  status: 'completed',
  result,
});

/** The raw bytes of the store's files (the database, its WAL and shared memory). */
function rawFiles(dir: string): string {
  return readdirSync(dir)
    .filter((f) => f.startsWith('store.sqlite'))
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('\n');
}

/** The sealed text of every stored value, as it sits in the file. */
async function sealedValues(store: Store): Promise<Map<string, string[]>> {
  const db = store.db;
  const out = new Map<string, string[]>();
  const put = (k: string, v: (string | null)[]) =>
    out.set(
      k,
      v.filter((x): x is string => x !== null && x.startsWith('sealed:')),
    );
  put(
    'cache',
    (await db.selectFrom('pcds_cache').select('result').execute()).map((r) => r.result),
  );
  put(
    'rows',
    (await db.selectFrom('pcds_rows').select('data').execute()).map((r) => r.data),
  );
  put(
    'results',
    (await db.selectFrom('pcds_results').select('result').execute()).map((r) => r.result),
  );
  put(
    'deliveries',
    (await db.selectFrom('pcds_deliveries').select('body').execute()).map((r) => r.body),
  );
  return out;
}

describe.each([
  { encrypted: true, store: tempStore },
  // In clear (PCDS_ENCRYPTION=off), her values are in the file before: the scan sees them go.
  { encrypted: false, store: clearStore },
])('erasure on the embedded store (sealed: $encrypted)', ({ encrypted, store: open }) => {
  it("finds her by every identifier it can derive, leaves no byte of hers in the file or the WAL, and keeps others' data", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-erasure-'));
    const store = await open(dir);
    const cache = new ResultCache(store);
    const batches = new BatchStore(store);

    // The cache: her profile fetched by her email, by her profile URL, by her name and
    // company, a question quoting her email, and a call still pending on her phone number.
    await cache.put('person_enrichment', { email: ADA.email }, USE, found('req_email', adaProfile));
    await cache.put(
      'person_enrichment',
      { social_media_url: ADA.url },
      USE,
      found('req_url', adaProfile),
    );
    await cache.put(
      'person_lookup_fields',
      { name: ADA.name, company: 'Analytical Engines', fields: ['mobile'] },
      USE,
      found('req_name', { mobile: ADA.phone }),
    );
    await cache.put(
      'person_ask',
      { question: `Is ${ADA.email.toUpperCase()} still an analyst?`, phone: '+1 415 555 0100' },
      USE,
      found('req_ask', { answer: 'Yes, still at the engine works.' }),
    );
    await cache.expect('req_pending', 'person_newsfeed', { social_media_url: ADA.url }, USE);
    await cache.put('person_enrichment', { email: GRACE.email }, USE, found('req_g', graceProfile));

    // A batch: her row by URL, Grace's row, and a compact row whose delivery (waiting for it)
    // holds her profile; another batch whose row named her only in an ignored cell.
    await batches.beginLoad('b1', 'person_enrichment', ['social_media_url', 'email']);
    await batches.addRows('b1', 'person_enrichment', [
      {
        row: 1,
        params: { social_media_url: ADA.url },
        key: { social_media_url: ADA.url },
        cells: { social_media_url: ADA.url, email: '' },
      },
      {
        row: 2,
        params: { email: GRACE.email },
        key: { email: GRACE.email },
        cells: { social_media_url: '', email: GRACE.email },
      },
      {
        row: 3,
        params: { phone: '+1 212 555 0199' },
        key: { phone: '+1 212 555 0199' },
        cells: { phone: '+1 212 555 0199' },
      },
    ]);
    await batches.finishLoad('b1', { blankLines: 0, dedupe: true });
    const lines: ResultLine[] = [
      { row: 1, key: {}, outcome: 'found', requestId: 'req_b1_1', result: adaProfile },
      { row: 2, key: {}, outcome: 'found', requestId: 'req_b1_2', result: graceProfile },
    ];
    await batches.writeResults('b1', lines);
    expect(
      await batches.recordDelivery('b1', 3, 'req_b1_3', { data: { result: adaProfile } }),
    ).toBe('recorded');
    await batches.beginLoad('b2', 'company_enrichment', ['domain', 'notes']);
    await batches.addRows('b2', 'company_enrichment', [
      {
        row: 1,
        params: { domain: 'analytical.example' },
        key: { domain: 'analytical.example' },
        cells: { domain: 'analytical.example', notes: `contact ${ADA.personal}` },
      },
      {
        row: 2,
        params: { domain: 'navy.example' },
        key: { domain: 'navy.example' },
        cells: { domain: 'navy.example', notes: 'no contact' },
      },
    ]);
    await batches.finishLoad('b2', { blankLines: 0, dedupe: true });

    const before = await sealedValues(store);
    const graceSealed = [
      ...(
        await store.db
          .selectFrom('pcds_cache')
          .select('result')
          .where('request_id', '=', 'req_g')
          .execute()
      ).map((r) => r.result!),
    ].filter((v) => v.startsWith('sealed:'));
    const raw = rawFiles(dir);
    for (const v of [...ADA_VALUES, GRACE.email]) expect(raw.includes(v), v).toBe(!encrypted);

    // Only her work email is given.
    const report = await eraseFromStore(store, { emails: [` ${ADA.email.toUpperCase()}`] });
    expect(report.removed).toEqual({
      cacheEntries: 4,
      pendingCalls: 1,
      batchRows: 3,
      results: 3,
      deliveries: 1,
    });
    expect(report.batches).toEqual(['b1', 'b2']);
    expect(report.derived).toBeGreaterThan(0);
    expect(report.unchecked).toEqual({ results: 0, cacheEntries: 0, batchRows: 0 });
    expect(report.pages).toMatch(/WAL checkpointed into the file and truncated/);
    expect(JSON.stringify(report)).not.toMatch(/lovelace|analytical/i);

    // The files: none of her values, none of the sealed text of her items, none of the keyed
    // subjects of her identifiers; Grace's sealed entry is still there (the scan sees values).
    const after = rawFiles(dir);
    expect(
      readdirSync(dir)
        .filter((f) => f.endsWith('-wal'))
        .map((f) => readFileSync(join(dir, f)).length),
    ).toEqual([0]);
    for (const v of ADA_VALUES) expect(after, v).not.toContain(v);
    const stillThere = (await sealedValues(store)).get('cache')!;
    const gone = [...before.values()].flat().filter((v) => !stillThere.includes(v));
    const graceRows = (await sealedValues(store)).get('rows')!;
    const kept = new Set([
      ...stillThere,
      ...graceRows,
      ...(await sealedValues(store)).get('results')!,
    ]);
    const erased = gone.filter((v) => !kept.has(v));
    expect(erased.length).toBeGreaterThanOrEqual(encrypted ? 9 : 0);
    for (const v of erased) expect(after.includes(v.slice(0, 80)), v.slice(0, 30)).toBe(false);
    for (const v of graceSealed) expect(after).toContain(v.slice(0, 80));
    if (!encrypted) expect(after).toContain(GRACE.email);
    const adaIds = requestedIdentifiers({
      emails: [ADA.email, ADA.personal],
      urls: [ADA.url],
      phones: [ADA.phone],
      people: [{ name: ADA.name, company: ADA.company }],
    });
    for (const id of adaIds) expect(after, id).not.toContain(store.sealer.subject(id));

    // What stays: Grace's entry and rows; her rows are erased lines, one per row still.
    expect(await cache.get('person_enrichment', { email: GRACE.email }, USE)).toBeDefined();
    for (const params of [{ email: ADA.email }, { social_media_url: ADA.url }])
      expect(await cache.get('person_enrichment', params, USE)).toBeUndefined();
    const b1 = await batches.results('b1');
    expect(b1.lines.map((l) => [l.row, l.outcome, l.code ?? null])).toEqual([
      [1, 'failed', 'erased'],
      [2, 'found', null],
      [3, 'failed', 'erased'],
    ]);
    // A delivery or a result arriving late for an erased row adds nothing.
    expect(
      await batches.recordDelivery('b1', 3, 'req_b1_3', { data: { result: adaProfile } }),
    ).toBe('finished');
    expect(
      (
        await batches.writeResults('b1', [
          { row: 3, key: {}, outcome: 'found', result: adaProfile },
        ])
      ).written,
    ).toBe(0);
    expect((await batches.readRows('b2', 1, 10)).rows).toMatchObject([
      { row: 1, code: 'erased', key: {} },
      { row: 2, params: { domain: 'navy.example' } },
    ]);
  });

  it('a second erasure finds nothing more, and says what it could not check', async () => {
    const store = await tempStore();
    const cache = new ResultCache(store);
    await cache.put('person_enrichment', { email: ADA.email }, USE, found('r1', adaProfile));
    expect((await eraseFromStore(store, { phones: [ADA.phone] })).removed.cacheEntries).toBe(1);
    const again = await eraseFromStore(store, { emails: [ADA.email] });
    expect(again.removed).toEqual({
      cacheEntries: 0,
      pendingCalls: 0,
      batchRows: 0,
      results: 0,
      deliveries: 0,
    });
    expect(again.pages).toBe('nothing was erased');
    expect(again.beyondTheStore.join('\n')).toMatch(/workflow histories/);
    await expect(eraseFromStore(store, {})).rejects.toThrow(/at least one identifier/);
  });
});

describe('person identifiers', () => {
  it('takes emails, URLs, phone numbers and a name at a company, wherever they are written', () => {
    const ids = identifiersOf(
      { question: 'Where does ADA@Example.com work? See linkedin.com/in/ada or +44 20 7946 0958.' },
      adaProfile,
    );
    for (const id of requestedIdentifiers({
      emails: ['ada@example.com', ADA.email, ADA.personal],
      urls: ['https://linkedin.com/in/ada', ADA.url],
      phones: [ADA.phone],
      // Accents, case, spacing and the company's legal form do not matter.
      people: [{ name: 'augusta  ADA lovelace', company: 'Analytical Engines' }],
    }))
      expect(ids, id).toContain(id);
    expect(identifiersOf({ domain: 'example.com', fields: ['mobile'] })).toEqual([]);
    // A name alone names no one.
    expect(identifiersOf({ name: 'Ada Lovelace' })).toEqual([]);
    expect(requestedIdentifiers({ people: [{ name: 'Ada', company: '!!' }] })).toEqual([]);
  });
});

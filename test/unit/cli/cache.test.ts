// `pcds cache`: what a purge's flags ask for (refusals that never echo an erasure's value), and the
// stats as rows and as a table.
import { describe, expect, it } from 'vitest';
import {
  cachedEndpointOf,
  formatAge,
  purgeRequestOf,
  statsRows,
  statsTable,
} from '../../../src/cli/cache.js';
import { erasureIdentifiersOf } from '../../../src/cli/erase.js';
import { CACHE_TTL } from '../../../src/calls/cache-policy.js';

const message = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected an error');
};

describe('cache purge flags', () => {
  it('refuses a purge with no condition unless --all, and --all without --yes', () => {
    expect(message(() => purgeRequestOf({}))).toMatch(/--endpoint.*--all --yes/);
    expect(message(() => purgeRequestOf({ all: true }))).toMatch(/--yes/);
    expect(purgeRequestOf({ all: true, yes: true })).toEqual({});
    expect(message(() => purgeRequestOf({ all: true, yes: true, expired: true }))).toMatch(
      /give it alone/,
    );
  });

  it('takes conditions together; ages through parseAge', () => {
    expect(
      purgeRequestOf({ endpoint: '/person/enrichment', olderThan: '7d', expired: true }),
    ).toEqual({ endpoint: 'person_enrichment', olderThanMs: 7 * 86_400_000, expired: true });
    expect(message(() => purgeRequestOf({ olderThan: 'a week' }))).toMatch(/^--older-than: /);
  });

  it('names the cached endpoints for an unknown or uncached one, without echoing it', () => {
    const unknown = message(() => cachedEndpointOf('ada@example.com'));
    expect(unknown).not.toContain('ada@example.com');
    for (const name of Object.keys(CACHE_TTL)) expect(unknown).toContain(name);
    expect(message(() => cachedEndpointOf('person_search'))).toMatch(/person_search is not cached/);
  });

  it("takes an erasure's identifiers and never echoes one, good or bad", () => {
    expect(
      erasureIdentifiersOf({
        email: [' Ada@Example.COM '],
        url: ['https://www.linkedin.com/in/x/'],
      }),
    ).toEqual({ emails: ['Ada@Example.COM'], urls: ['https://www.linkedin.com/in/x/'] });
    expect(
      erasureIdentifiersOf({
        name: ['Ada Lovelace'],
        company: ['Analytical Engines', 'Babbage & Co'],
      }).people,
    ).toEqual([
      { name: 'Ada Lovelace', company: 'Analytical Engines' },
      { name: 'Ada Lovelace', company: 'Babbage & Co' },
    ]);
    for (const bad of [
      { email: ['ada at example'] },
      { url: ['linkedin com/in/ada lovelace'] },
      { phone: ['ada 12'] },
      { name: ['ada', '!!'], company: ['x'] },
    ]) {
      const text = message(() => erasureIdentifiersOf(bad));
      expect(text).toMatch(/not shown/);
      expect(text).not.toContain('ada');
    }
    expect(message(() => erasureIdentifiersOf({ name: ['Ada Lovelace'] }))).toMatch(
      /a name alone names many people/,
    );
    expect(message(() => erasureIdentifiersOf({}))).toMatch(/^say whom to erase/);
  });
});

describe('cache stats', () => {
  it('lists every cached endpoint with its times to live, and the table says where the store is', () => {
    const rows = statsRows([
      {
        endpoint: 'person_enrichment',
        entries: 3,
        found: 2,
        empty: 1,
        expired: 1,
        hits: 4,
        oldestFetchedAt: Date.parse('2026-01-01T00:00:00Z'),
        newestFetchedAt: Date.parse('2026-01-02T00:00:00Z'),
      },
    ]);
    expect(rows.map((r) => r.endpoint)).toEqual(Object.keys(CACHE_TTL));
    expect(rows.find((r) => r.endpoint === 'person_enrichment')).toMatchObject({
      entries: 3,
      hits: 4,
      oldestFetchedAt: '2026-01-01T00:00:00.000Z',
      ttl: { found: '30d', empty: '7d' },
    });
    expect(rows.find((r) => r.endpoint === 'person_newsfeed')).toMatchObject({
      entries: 0,
      ttl: { found: '1d', empty: '6h' },
    });
    const table = statsTable('sqlite:/tmp/store.sqlite', rows);
    expect(table.split('\n')[0]).toBe('store: sqlite:/tmp/store.sqlite');
    expect(table).toMatch(/person_enrichment\s+3\s+2\s+1\s+1\s+4\s+30d \/ 7d\s+2026-01-01/);
    expect(table).toMatch(/^3 entries, 1 past their time to live/m);
  });

  it('formats durations in their largest whole unit', () => {
    expect([30 * 86_400_000, 6 * 3_600_000, 90 * 60_000, 45_000].map(formatAge)).toEqual([
      '30d',
      '6h',
      '90m',
      '45s',
    ]);
  });
});

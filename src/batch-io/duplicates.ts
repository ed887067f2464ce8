// Duplicate rows of a batch: rows whose parameters are the same once normalised share one call.
// The first pass over the input finds, for each row, the earlier row it repeats, and writes only
// row numbers to an index file beside the output (never a parameter, never a fingerprint): a
// 50,000-row file's map is too large to carry in workflow state. Reads of the input mark each
// row from that index: a leader with the number of its followers, a follower with its leader.
import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import normalizeUrl from 'normalize-url';
import { writeAtomically } from '../files/atomic-write.js';
import type { InputRow } from '../batch/types.js';

export { duplicatesIndexPath } from '../batch/types.js';

/** Parameters that hold an email address, a phone number, a URL or a domain. */
const EMAILS = new Set(['email', 'work_email', 'personal_email']);
const PHONES = new Set(['phone', 'mobile']);
const DOMAINS = new Set(['domain', 'company_domain']);

/** How a URL is normalised for lookups and erasure subjects (scheme, www., trailing /, fragment, query order). */
export const URL_OPTIONS = {
  stripProtocol: true,
  stripWWW: true,
  removeTrailingSlash: true,
  stripHash: true,
  sortQueryParameters: true,
} as const;

function normalisedString(name: string, raw: string): string {
  const v = raw.trim();
  if (EMAILS.has(name)) return v.toLowerCase();
  if (PHONES.has(name)) return parsePhoneNumberFromString(v)?.number ?? v.replace(/[\s().-]/g, '');
  if (DOMAINS.has(name)) return v.toLowerCase().replace(/^www\./, '');
  if (/^https?:\/\//i.test(v) || name.endsWith('_url')) {
    try {
      return normalizeUrl(v, URL_OPTIONS);
    } catch {
      return v;
    }
  }
  // Names, companies, questions: the same words, however spaced.
  return v.replace(/\s+/g, ' ');
}

function normalised(name: string, value: unknown): unknown {
  if (typeof value === 'string') return normalisedString(name, value);
  if (Array.isArray(value)) return value.map((v) => normalised(name, v));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort())
      out[k] = normalised(k, (value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/**
 * What a row's parameters are once normalised: emails trimmed and lower-cased, phone numbers in
 * E.164 where they parse, URLs normalised (scheme, www., trailing slash, fragment, query order),
 * domains lower-cased, other text trimmed with its spaces collapsed. A hash, kept in memory only.
 */
export function paramsFingerprint(params: Record<string, unknown>): string {
  return createHash('sha256').update(normalisedParams(params)).digest('base64url');
}

/** The parameters once normalised, as one JSON text (keys sorted): what a lookup key hashes. */
export function normalisedParams(params: Record<string, unknown>): string {
  return JSON.stringify(normalised('', params));
}

/** Finds duplicates row by row, in file order: the first row with given parameters leads. */
export class DuplicateFinder {
  private readonly leaders = new Map<string, number>();
  /** Follower row -> leader row. */
  readonly followers = new Map<number, number>();

  add(row: InputRow): void {
    if (!('params' in row)) return;
    const fp = paramsFingerprint(row.params);
    const leader = this.leaders.get(fp);
    if (leader === undefined) this.leaders.set(fp, row.row);
    else if (leader !== row.row) this.followers.set(row.row, leader);
  }
}

interface IndexFile {
  /** [follower row, leader row], followers in file order. */
  followers: [number, number][];
}

export async function writeDuplicatesIndex(
  path: string,
  followers: ReadonlyMap<number, number>,
): Promise<void> {
  const body: IndexFile = { followers: [...followers] };
  await writeAtomically(path, (tmp) => writeFile(tmp, JSON.stringify(body)));
}

export interface DuplicatesIndex {
  /** Follower row -> leader row. */
  leaderOf: Map<number, number>;
  /** Leader row -> how many rows repeat it. */
  followerCount: Map<number, number>;
}

// The index a worker read last, per path: each chunk of a batch reads the same file.
const cache = new Map<string, { mtimeMs: number; size: number; index: DuplicatesIndex }>();

/** The index at `path`, or undefined when it is not there. */
export async function readDuplicatesIndex(path: string): Promise<DuplicatesIndex | undefined> {
  const st = await stat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!st) return undefined;
  const hit = cache.get(path);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.index;
  const body = JSON.parse(await readFile(path, 'utf8')) as IndexFile;
  const index: DuplicatesIndex = { leaderOf: new Map(), followerCount: new Map() };
  for (const [follower, leader] of body.followers) {
    index.leaderOf.set(follower, leader);
    index.followerCount.set(leader, (index.followerCount.get(leader) ?? 0) + 1);
  }
  // One batch's index at a time is plenty: a worker reads chunks of few batches at once.
  if (cache.size >= 8) cache.delete(cache.keys().next().value!);
  cache.set(path, { mtimeMs: st.mtimeMs, size: st.size, index });
  return index;
}

/** Marks the rows of a chunk: leaders with their followers' count, followers with their leader. */
export function markDuplicates(rows: InputRow[], index: DuplicatesIndex): InputRow[] {
  return rows.map((r) => {
    if (!('params' in r)) return r;
    const leader = index.leaderOf.get(r.row);
    if (leader !== undefined) return { ...r, duplicateOf: leader };
    const followers = index.followerCount.get(r.row);
    return followers ? { ...r, followers } : r;
  });
}

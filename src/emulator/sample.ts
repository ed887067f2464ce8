// Sample enrichment inputs drawn from the seeded dataset, for demos and batch tests: known
// emails (optionally with name and phone), unknown identities and malformed rows, in the shares
// asked for. The same options always give the same file.
import { writeFile } from 'node:fs/promises';
import { datasetFor } from './dataset/dataset.js';
import type { PersonRecord } from './dataset/records.js';
import { Rng, seedOf } from './random.js';

export interface SampleOptions {
  rows: number;
  seed?: number;
  /** Share of rows whose identity is not in the dataset (an empty, free result). */
  unknownShare?: number;
  /** Share of malformed rows: alternately a bad email and a row with empty identity columns. */
  badShare?: number;
  withName?: boolean;
  withPhone?: boolean;
  dataset?: { people: number; companies: number };
}

export interface SampleRow {
  email: string;
  name?: string;
  phone?: string;
}

const emailOf = (p: PersonRecord) => p.businessEmail ?? p.altEmails[0];

export function sampleRows(o: SampleOptions): SampleRow[] {
  const seed = o.seed ?? 42;
  const d = datasetFor(seed, o.dataset ?? { people: 5000, companies: 600 });
  const rng = new Rng(seedOf(seed, 'sample', o.rows));
  const withEmail = d.people.filter((p) => emailOf(p));
  const unknown = Math.round(o.rows * (o.unknownShare ?? 0));
  const bad = Math.round(o.rows * (o.badShare ?? 0));
  const kinds: ('known' | 'unknown' | 'bad')[] = [];
  for (let i = 0; i < o.rows; i++)
    kinds.push(i < unknown ? 'unknown' : i < unknown + bad ? 'bad' : 'known');
  // Shuffle deterministically so unknown and bad rows are spread through the file.
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [kinds[i], kinds[j]] = [kinds[j], kinds[i]];
  }
  let badCount = 0;
  return kinds.map((kind, i) => {
    if (kind === 'bad') {
      badCount++;
      return badCount % 2 === 1 ? { email: `not-an-email-${i}` } : { email: '' };
    }
    if (kind === 'unknown') {
      const row: SampleRow = { email: `nobody.${i}.${rng.int(1000, 9999)}@unknown.pcds.dev` };
      if (o.withName) row.name = 'Unknown Person';
      if (o.withPhone) row.phone = '';
      return row;
    }
    const p = withEmail[(i * 7919 + rng.int(0, withEmail.length - 1)) % withEmail.length];
    const row: SampleRow = { email: emailOf(p) };
    if (o.withName) row.name = p.displayname;
    if (o.withPhone) row.phone = p.phones[0]?.fullphone ?? '';
    return row;
  });
}

const csvCell = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

export function sampleCsv(o: SampleOptions): string {
  const cols = [
    'email',
    ...(o.withName ? ['name'] : []),
    ...(o.withPhone ? ['phone'] : []),
  ] as (keyof SampleRow)[];
  const lines = [cols.join(',')];
  for (const r of sampleRows(o)) {
    const line = cols.map((c) => csvCell(r[c] ?? '')).join(',');
    // A row of one empty cell is written quoted: an empty line would be a blank line, not a row.
    lines.push(line === '' ? '""' : line);
  }
  return lines.join('\n') + '\n';
}

export async function writeSampleCsv(path: string, o: SampleOptions): Promise<number> {
  await writeFile(path, sampleCsv(o), 'utf8');
  return o.rows;
}

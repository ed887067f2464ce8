// Which rows of a compact batch were sent, for a batch started before the store (the store keeps
// the same entries for the others). Rows of a compact batch run as activities of the batch, not as
// workflows of their own, so no workflow stands between a row and a second submit. This file
// beside the output does, as the ledger of the submit protocol (activities/submit.ts): before its POST a row's attempt claims the row ("sending"), after
// a 202 it records the job ("accepted"), after a refusal that sent nothing it lets the row go
// ("released"). Claims are made under the path's lock, so a retried attempt, an attempt that
// outlived its timeout, another worker process and a batch reset to an earlier point all find
// what an earlier attempt did: an accepted job is polled, never submitted again, and a claim that
// may have been sent ends the row as submit_outcome_unknown. Entries name rows, keys and request
// ids only: nothing personal.
import { RowIndexes, withPathLock } from './result-writer.js';

export interface JournalEntry {
  row: number;
  state: 'sending' | 'accepted' | 'released';
  /** The attempt that wrote it: `runId/activityId/attempt`. */
  owner: string;
  keyId?: string;
  requestId?: string;
  status?: string;
  /** Epoch ms when the 202 arrived. */
  acceptedAt?: number;
}

/** One journal per batch and output: another batch writing the same file starts afresh. */
export const journalPathOf = (output: string, batchId: string) => `${output}.${batchId}.sent`;

const journals = new RowIndexes<JournalEntry>((line) =>
  line.state === 'sending' || line.state === 'accepted' || line.state === 'released'
    ? (line as unknown as JournalEntry)
    : undefined,
);

/** What a claim found: the row is this attempt's to send, or an earlier attempt's entry. */
export type Claim = { mine: true } | { mine: false; entry: JournalEntry };

/**
 * Claims `row` for `owner` just before its POST. The row is this attempt's when nobody claimed
 * it, when an earlier attempt released it, or when this attempt claimed it before (a repeat
 * after a 429). Otherwise the earlier entry is returned: a job to poll, or a send that may have
 * reached the service.
 */
export function claimRow(path: string, row: number, owner: string): Promise<Claim> {
  return withPathLock(path, async () => {
    const index = await journals.current(path);
    const entry = index.rows.get(row);
    if (entry && entry.state !== 'released' && entry.owner !== owner) return { mine: false, entry };
    if (entry?.state === 'accepted') return { mine: false, entry };
    const claim: JournalEntry = { row, state: 'sending', owner };
    await journals.append(path, index, [claim]);
    return { mine: true };
  });
}

/** The row's entry, if any (read without claiming). */
export function rowEntry(path: string, row: number): Promise<JournalEntry | undefined> {
  return withPathLock(path, async () => (await journals.current(path)).rows.get(row));
}

/** Records what became of this attempt's claim: the accepted job, or nothing sent. */
export function recordRow(path: string, entry: JournalEntry): Promise<void> {
  return withPathLock(path, async () => {
    const index = await journals.current(path);
    await journals.append(path, index, [entry]);
  });
}

/** Forgets cached journals (tests). */
export function forgetJournals(): void {
  journals.clear();
}

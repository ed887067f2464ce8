// A compact row's submit journal: the ledger of the no-double-submit protocol
// (activities/submit.ts) for rows run as activities of their batch, which have no workflow of
// their own to stand between a row and a second submit. The store keeps it, one entry per row:
// before its POST a row's attempt claims the row ("sending"), after a 202 it records the job
// ("accepted"), after a refusal that sent nothing it lets the row go ("released"). Claims compare
// and set, so a retried attempt, an attempt that outlived its timeout, another worker process and
// a batch reset to an earlier point all find what an earlier attempt did: an accepted job is
// polled, never submitted again, and a claim that may have been sent ends the row as
// submit_outcome_unknown. Entries name rows, keys and request ids only: nothing personal.

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

/** What a claim found: the row is this attempt's to send, or an earlier attempt's entry. */
export type Claim = { mine: true } | { mine: false; entry: JournalEntry };

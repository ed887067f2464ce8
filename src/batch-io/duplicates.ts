// Duplicate rows of a batch's input, found where the caller reads it (a batch's plan counts the
// rows that will send nothing): rows whose parameters are the same once normalised share one
// call. Only a fingerprint of each distinct row stays in memory, never a parameter.
import { createHash } from 'node:crypto';
import type { InputRow } from '../batch/types.js';
import { normalisedParams } from '../batch/normalise.js';

/** A hash of the row's parameters once normalised (batch/normalise.ts), kept in memory only. */
export function paramsFingerprint(params: Record<string, unknown>): string {
  return createHash('sha256').update(normalisedParams(params)).digest('base64url');
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

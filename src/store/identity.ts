// Which store holds a batch's rows: the store's identity (a random id its migrations made) and
// where it is, recorded in the batch's input when it starts and checked by every worker activity
// that reads or writes the batch in a store. A worker on another store refuses the batch with
// `store_mismatch` and the setting to fix, instead of finding no rows (or writing results where
// the batch's caller never reads them).

/** A store as a batch records it: its id, and its location without a password (safe to show). */
export interface StoreIdentity {
  id: string;
  shown: string;
}

const short = (id: string) => id.slice(0, 8);

/**
 * Why a worker whose store is `actual` must not serve a batch recorded on `expected`; undefined
 * when they are one store (or the batch recorded none: it started before stores had an id).
 */
export function storeMismatch(
  expected: Partial<StoreIdentity> | undefined,
  actual: { id: string | undefined; shown: string },
): string | undefined {
  if (!expected?.id || !actual.id || expected.id === actual.id) return undefined;
  const theirs = expected.shown
    ? `${expected.shown} (store id ${short(expected.id)})`
    : `store id ${short(expected.id)}`;
  return (
    `the batch's rows are in the store ${theirs}, where the client that started it loaded them, ` +
    `but this worker uses ${actual.shown} (store id ${short(actual.id)}): set PCDS_STORE_URL to ` +
    `the same store on the client (CLI, service, pcds mcp) and on every worker`
  );
}

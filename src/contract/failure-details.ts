// What a coded failure carries beside its message, in its first detail (encrypted with the other
// payloads): written once by the activities' failures, read by the workflows, the batch and the
// client. Ids and numbers only, never request data.

/** The first detail of a coded ApplicationFailure. */
export interface FailureDetails {
  code: string;
  httpStatus?: number;
  requestId?: string;
  retryAfterMs?: number;
  /** The wait chosen for the next attempt (the workflow reads it to repeat a submit). */
  retryDelayMs?: number;
}

/** The fields of a failure's first detail that have their types (a detail of another kind: none). */
export function failureDetailsOf(
  details: readonly unknown[] | null | undefined,
): Partial<FailureDetails> {
  const d: unknown = details?.[0];
  if (typeof d !== 'object' || d === null) return {};
  const { code, httpStatus, requestId, retryAfterMs, retryDelayMs } = d as Record<string, unknown>;
  return {
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof httpStatus === 'number' ? { httpStatus } : {}),
    ...(typeof requestId === 'string' ? { requestId } : {}),
    ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}),
    ...(typeof retryDelayMs === 'number' ? { retryDelayMs } : {}),
  };
}

// A job's result travels in an activity's result payload, which Temporal refuses above 2 MB (and
// a refused completion is attempted again and again). Above a safe bound the call ends instead,
// as result_too_large with its request id: the job is not submitted again, and its result can
// still be read from the service.
import { terminalFailure } from './failures.js';

export const RESULT_TOO_LARGE = 'result_too_large';

/** Serialized size, as the default payload converter writes it (JSON, UTF-8). */
export const serializedBytes = (value: unknown): number =>
  Buffer.byteLength(JSON.stringify(value) ?? '');

/** Returns `result`, or throws result_too_large when it serializes to more than `maxBytes`. */
export function withinResultBound<T>(result: T, maxBytes: number, requestId: string): T {
  const size = serializedBytes(result);
  if (size <= maxBytes) return result;
  throw terminalFailure(
    { code: RESULT_TOO_LARGE },
    requestId,
    `${RESULT_TOO_LARGE}: the job's result is ${size} bytes, over the bound of ${maxBytes} ` +
      `(PCDS_MAX_RESULT_BYTES); it was not carried: read it from the service with request_id ${requestId}`,
  );
}

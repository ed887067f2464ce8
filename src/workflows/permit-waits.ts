// How a call's wait for a permit reads in its details (the Web UI's "current details").
// Workflow code may import this module: it formats only.
import type { PermitWait } from '../http/permits.js';

const WHY: Record<PermitWait['reason'], string> = {
  minute_window: "the key's minute window is full",
  hour_window: "the key's hour window is full",
  closed: 'the key is closed after a 429 (Retry-After)',
};

/** E.g. "poll waits for a permit on key k1: the key's minute window is full, until 12:00:05Z". */
export function describePermitWait(wait: PermitWait): string {
  const until = new Date(wait.until).toISOString().replace(/\.\d+Z$/, 'Z');
  return `${wait.kind} waits for a permit on key ${wait.keyId}: ${WHY[wait.reason]}, until about ${until}`;
}

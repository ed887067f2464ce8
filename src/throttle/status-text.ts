// The operator's view of a key's throttle as text: one block per key, from the state query; and
// one request's wait for a permit in a line (a call's details, a compact row's heartbeat).
import type { PermitWait } from './permits.js';
import type { ThrottleStatus } from './protocol.js';

const iso = (t: number) => new Date(t).toISOString().replace(/\.\d+Z$/, 'Z');
const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

export function formatThrottleStatus(status: ThrottleStatus): string {
  const { snapshot: s, settings } = status;
  const window = (name: string, w: typeof s.minute) =>
    `  ${name.padEnd(7)} ${w.used}/${w.limit} used in the last ${seconds(w.spanMs)}` +
    (w.limit < w.configured ? ` (learned limit; configured ${w.configured})` : '');
  const lines = [
    `key ${status.keyId}`,
    window('minute', s.minute),
    window('hour', s.hour),
    `  waiting ${s.waiting} reservation(s) ahead (horizon ${seconds(settings.horizonMs)}, margin ${settings.marginMs} ms)`,
    s.closedUntil
      ? `  closed  until ${iso(s.closedUntil)} (${seconds(s.closedUntil - s.asOf)} left): ${s.closedReason ?? '429'}`
      : s.easingUntil
        ? `  open    easing back in (half the minute limit) until ${iso(s.easingUntil)}`
        : '  open',
    s.breaker.open
      ? `  credits BREAKER OPEN since ${iso(s.breaker.since ?? s.asOf)}: ${s.breaker.reason ?? 'insufficient_credits'}; submits paused, resume with: pcds throttle resume ${status.keyId}`
      : `  credits ok${s.breaker.resetAt ? ` (breaker reset ${iso(s.breaker.resetAt)} by ${s.breaker.resetBy ?? 'operator'})` : ''}`,
    `  granted submit ${s.counts.submit}, poll ${s.counts.poll}, page ${s.counts.page}, usage ${s.counts.usage}; told to wait ${s.counts.retryLater}; refused ${s.counts.refused}; 429s ${s.counts.rateLimited}`,
  ];
  if (s.recent429s.length > 0) {
    lines.push('  recent 429s:');
    for (const e of s.recent429s) {
      lines.push(
        `    ${iso(e.at)} Retry-After ${e.retryAfterMs !== undefined ? `${e.retryAfterMs} ms` : 'none'}` +
          (e.learned ? `; learned ${e.learned.window} limit ${e.learned.limit}` : ''),
      );
    }
  }
  return lines.join('\n');
}

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

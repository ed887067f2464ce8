// The operator's view of a key's throttle as text: one block per key, from the state query.
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

// A stable fingerprint of a submit (endpoint plus input with keys sorted), to count duplicate
// submits of an identical input. callback_url is left out: it does not change the work.
import { createHash } from 'node:crypto';

function stable(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stable);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, stable((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

export function submitFingerprint(endpoint: string, input: Record<string, unknown>): string {
  const { callback_url: _omit, ...rest } = input;
  return createHash('sha256')
    .update(endpoint)
    .update(JSON.stringify(stable(rest)))
    .digest('base64url');
}

// Shared helpers for the emulator suites: start an emulator in-process on port 0 and talk to it
// over real HTTP.
import {
  startEmulator,
  type EmulatorOptionsInput,
  type RunningEmulator,
} from '../../src/emulator/index.js';

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

/** Fast defaults: latencies and windows shrunk, limits off unless a suite turns them on. */
export async function start(options: EmulatorOptionsInput = {}): Promise<RunningEmulator> {
  return startEmulator({
    port: 0,
    timeScale: 100,
    latency: { queuedMs: 200, processingMs: 800 },
    limits: { enabled: false },
    dataset: { people: 2000, companies: 300 },
    ...options,
  });
}

export function client(em: RunningEmulator, creds: { key: string; secret: string } = em.devKey) {
  const headers = { 'x-api-key': creds.key, 'x-api-secret': creds.secret };
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<Reply> => {
    const res = await fetch(em.url + path, {
      method,
      headers: {
        ...headers,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...extra,
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // leave the text
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
  return {
    post: (path: string, body: unknown, extra?: Record<string, string>) =>
      call('POST', path, body, extra),
    get: (path: string, extra?: Record<string, string>) => call('GET', path, undefined, extra),
    call,
    /** Poll until the job leaves the running states; returns the terminal reply. */
    async waitDone(path: string, requestId: string, query = '', maxMs = 5000): Promise<Reply> {
      const until = Date.now() + maxMs;
      for (;;) {
        const r = await call('GET', `${path}?request_id=${requestId}${query}`);
        if (!(r.status === 202 || (r.status === 200 && r.body?.data?.completed === false)))
          return r;
        if (Date.now() > until) throw new Error(`job did not finish within ${maxMs} ms`);
        await sleep(5);
      }
    },
  };
}

export function admin(em: RunningEmulator) {
  return async (method: string, path: string, body?: unknown): Promise<Reply> => {
    const res = await fetch(em.url + path, {
      method,
      headers: {
        'x-admin-token': em.adminToken,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, headers: res.headers, body: await res.json() };
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A new key through the keys API; returns its id, key and secret. */
export async function newKey(em: RunningEmulator, settings: Record<string, unknown> = {}) {
  const r = await admin(em)('POST', '/v1/api-keys', settings);
  if (r.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(r.body)}`);
  return {
    id: r.body.data.id as string,
    key: r.body.data.key as string,
    secret: r.body.data.secret as string,
  };
}

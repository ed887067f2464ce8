// Helpers for the MCP suites: JSON-RPC over real HTTP against an in-process emulator, tool calls
// whose text output is read back as JSON, and a PKCE pair for the OAuth flow.
import { createHash, randomBytes } from 'node:crypto';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { datasetFor } from '../../src/emulator/dataset/dataset.js';
import { sleep } from './helpers.js';

export type Auth =
  { key: string; secret: string } | { bearer: string } | { authorization: string } | null;

export interface RpcHttpReply {
  status: number;
  headers: Headers;
  body: any;
}

function authHeaders(auth: Auth): Record<string, string> {
  if (!auth) return {};
  if ('bearer' in auth) return { authorization: `Bearer ${auth.bearer}` };
  if ('authorization' in auth) return { authorization: auth.authorization };
  return { 'x-api-key': auth.key, 'x-api-secret': auth.secret };
}

export function mcp(em: RunningEmulator, auth: Auth = em.devKey, path = '/mcp') {
  let nextId = 1;
  const raw = async (body: string): Promise<RpcHttpReply> => {
    const res = await fetch(em.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authHeaders(auth) },
      body,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  const request = (method: string, params?: unknown) =>
    raw(JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, ...(params ? { params } : {}) }));
  /** tools/call; `doc` is the JSON document in the text content item (when there is a result). */
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = await request('tools/call', { name, arguments: args });
    const text = r.body.result?.content?.[0]?.text as string | undefined;
    return { ...r, doc: text === undefined ? undefined : JSON.parse(text) };
  };
  return {
    raw,
    request,
    call,
    /** check_status until it leaves pending. */
    async waitStatus(args: Record<string, unknown>, maxMs = 5000) {
      const until = Date.now() + maxMs;
      for (;;) {
        const r = await call('check_status', args);
        if (r.doc?.status !== 'pending') return r;
        if (Date.now() > until) throw new Error(`check_status stayed pending for ${maxMs} ms`);
        await sleep(10);
      }
    },
  };
}

/** A person and company of the seeded dataset, for inputs that match. */
export function knownSubjects(em: RunningEmulator) {
  const d = datasetFor(em.options.seed, em.options.dataset);
  const p = d.people.find((x) => x.businessEmail && x.social.linkedin)!;
  const c = d.currentCompany(p)!;
  return { email: p.businessEmail!, linkedin: p.social.linkedin.url, company: c };
}

export function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

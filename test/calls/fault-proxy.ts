// A scripted HTTP proxy in front of the emulator: it answers the next requests matching a route
// with given replies (503, 429 with Retry-After, a dropped connection) and forwards the rest,
// recording when every request arrived. Deterministic sequences that share-based faults cannot give.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

export type ScriptedReply =
  | { status: number; code: string; retryAfterSeconds?: number }
  /** This body, as given (e.g. a completed job's envelope, as if the job finished at its submit). */
  | { status: number; body: unknown }
  /** Read the request, then close the socket without a reply. */
  | { drop: true };

export interface SeenRequest {
  method: string;
  path: string;
  at: number;
  /** What the client got: a scripted status, 'dropped', or the forwarded status. */
  answered: number | 'dropped';
}

export interface FaultProxy {
  url: string;
  /** Queue replies for requests whose "METHOD /path" (no query) equals `route`. */
  script(route: string, replies: ScriptedReply[]): void;
  seen(route?: string): SeenRequest[];
  stop(): Promise<void>;
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const scripts = new Map<string, ScriptedReply[]>();
  const seen: SeenRequest[] = [];
  const readBody = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const at = Date.now();
      const path = (req.url ?? '/').split('?')[0];
      const route = `${req.method} ${path}`;
      const body = await readBody(req);
      const next = scripts.get(route)?.shift();
      if (next && 'drop' in next) {
        seen.push({ method: req.method!, path, at, answered: 'dropped' });
        req.socket.destroy();
        return;
      }
      if (next && 'body' in next) {
        seen.push({ method: req.method!, path, at, answered: next.status });
        res.writeHead(next.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(next.body));
        return;
      }
      if (next) {
        seen.push({ method: req.method!, path, at, answered: next.status });
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (next.retryAfterSeconds !== undefined)
          headers['retry-after'] = String(next.retryAfterSeconds);
        res.writeHead(next.status, headers);
        res.end(
          JSON.stringify({
            success: false,
            error: { code: next.code, message: 'scripted' },
            timestamp: new Date().toISOString().slice(0, 19),
          }),
        );
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
      const upstream = await request(target + (req.url ?? '/'), {
        method: req.method as 'GET' | 'POST',
        headers,
        ...(body.length ? { body } : {}),
      });
      const text = await upstream.body.text();
      seen.push({ method: req.method!, path, at, answered: upstream.statusCode });
      const out: Record<string, string> = { 'content-type': 'application/json' };
      const ra = upstream.headers['retry-after'];
      if (typeof ra === 'string') out['retry-after'] = ra;
      res.writeHead(upstream.statusCode, out);
      res.end(text);
    })().catch(() => req.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    script: (route, replies) => scripts.set(route, [...(scripts.get(route) ?? []), ...replies]),
    seen: (route) => (route ? seen.filter((s) => `${s.method} ${s.path}` === route) : [...seen]),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

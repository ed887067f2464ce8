// Temporal's remote codec protocol over HTTP, for the Web UI and the temporal CLI: POST /encode
// and /decode take `{payloads: [...]}` (metadata and data in base64) and answer the same shape,
// run through the payload codec. Only callers with the access token are served, only the
// configured namespace, and browsers only from the Web UI's origin (CORS). Payloads and tokens
// are never logged.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import cors from '@fastify/cors';
import type { Payload, PayloadCodec } from '@temporalio/common';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  createBoundedServer,
  listenerLimits,
  type ListenerLimits,
} from './http/listener-limits.js';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Callers send it as `Authorization: Bearer <token>`, or as the first path segment (`/<token>/decode`). */
  token: string;
  /** The one namespace whose payloads this server encodes and decodes (X-Namespace). */
  namespace: string;
  /** Origin(s) of the Web UI (scheme://host:port), the only ones a browser may call from. */
  allowedOrigin: string | string[];
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** Largest request body, bytes. Default 16 MB: the UI decodes a page of history at once. */
  bodyLimit?: number;
  /** Header and request deadlines and the connection limit (PCDS_LISTEN_*); defaults otherwise. */
  limits?: Partial<ListenerLimits>;
}

export interface CodecServer {
  /** Local address, without the token. */
  url: string;
  stop(): Promise<void>;
}

const payloadsBody = z.object({
  payloads: z.array(
    z.object({
      metadata: z.record(z.string(), z.string()).nullish(),
      data: z.string().nullish(),
    }),
  ),
});
type JsonPayload = z.infer<typeof payloadsBody>['payloads'][number];

const fromBase64 = (text: string) => new Uint8Array(Buffer.from(text, 'base64'));
const toBase64 = (bytes: Uint8Array | null | undefined) =>
  Buffer.from(bytes ?? []).toString('base64');

function toPayload(p: JsonPayload): Payload {
  const metadata: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(p.metadata ?? {})) metadata[k] = fromBase64(v);
  return { metadata, data: fromBase64(p.data ?? '') };
}

function toJson(p: Payload): { metadata: Record<string, string>; data: string } {
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.metadata ?? {})) metadata[k] = toBase64(v);
  return { metadata, data: toBase64(p.data) };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** The normalised origin of a URL (the Web UI's address): what browsers send in Origin. */
export function originOf(url: string): string {
  return new URL(url).origin;
}

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  if (options.token.length < 16) throw new Error('the codec server token must be 16+ characters');
  const expected = digest(options.token);
  const tokenOk = (given: string | undefined) =>
    given !== undefined && timingSafeEqual(digest(given), expected);
  const limits = listenerLimits(options.limits);
  const app = Fastify({
    logger: false,
    bodyLimit: options.bodyLimit ?? 16 * 1024 * 1024,
    serverFactory: (handler) => createBoundedServer(limits, handler),
  });
  const origins = [options.allowedOrigin].flat().map(originOf);
  await app.register(cors, {
    origin: origins,
    methods: ['POST'],
    allowedHeaders: ['Content-Type', 'X-Namespace', 'Authorization'],
    credentials: true,
    maxAge: 600,
  });

  // Checked before the body is read: a caller without the token gets nothing but a 401, and a
  // page from another origin is refused even where its browser would send the request anyway.
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method === 'OPTIONS') return;
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.includes(origin))
      return reply.code(403).send({ error: 'origin not allowed' });
    const auth = req.headers.authorization;
    const bearer = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
    const segments = req.url.split('?')[0].split('/').filter(Boolean);
    const inPath = segments.length === 2 ? decodeURIComponent(segments[0]) : undefined;
    if (!tokenOk(bearer) && !tokenOk(inPath))
      return reply.code(401).send({ error: 'unauthorized' });
    const namespace = req.headers['x-namespace'];
    if (typeof namespace !== 'string' || namespace === '')
      return reply.code(400).send({ error: 'the X-Namespace header is required' });
    if (namespace !== options.namespace)
      return reply.code(403).send({ error: 'this codec server serves another namespace' });
  });

  const handler =
    (direction: 'encode' | 'decode') => async (req: FastifyRequest, reply: FastifyReply) => {
      const parsed = payloadsBody.safeParse(req.body);
      if (!parsed.success)
        return reply.code(400).send({ error: 'the body must be {"payloads": [...]}' });
      let out: Payload[];
      try {
        const input = parsed.data.payloads.map(toPayload);
        out = await options.codec[direction](input);
      } catch {
        // The codec's reason (unknown key, tampered payload) names no value; keep it generic anyway.
        return reply.code(400).send({ error: `the payloads could not be ${direction}d` });
      }
      return reply.send({ payloads: out.map(toJson) });
    };
  for (const direction of ['encode', 'decode'] as const) {
    app.post(`/${direction}`, handler(direction));
    app.post(`/:token/${direction}`, handler(direction));
  }

  await app.listen({ port: options.port, host: options.host ?? '127.0.0.1' });
  const { address, port } = app.server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return { url: `http://${host}:${port}`, stop: () => app.close() };
}

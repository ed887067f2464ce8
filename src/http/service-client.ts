// The only code that talks to the service's HTTP API: one undici Pool per base URL (bounded,
// keep-alive), credential headers per key, and every reply turned into a Reply value or a typed
// error. Async endpoints return the raw Reply, which the contract's classifiers interpret.
import { Pool } from 'undici';
import {
  parseEnvelope,
  parseRetryAfter,
  pcdsErrorCode,
  type EndpointDef,
  type Reply,
} from '../contract/index.js';
import { ServiceError, transportErrorOf } from './errors.js';

export interface Credentials {
  key: string;
  secret: string;
}

export interface HttpOptions {
  baseUrl: string;
  /** Sockets per base URL. */
  connections: number;
  /** Headers and body timeout of one request. */
  timeoutMs: number;
  connectTimeoutMs?: number;
}

export interface UsageQuery {
  month?: number;
  year?: number;
}

/** One key's view of the service. It never exposes its credentials. */
export interface ServiceClient {
  /** POST a job. The Reply says accepted (202 + request_id), done at once, or refused. */
  submit(endpoint: EndpointDef, params: Record<string, unknown>): Promise<Reply>;
  /** GET the job's state (free, safe to repeat). */
  poll(endpoint: EndpointDef, requestId: string): Promise<Reply>;
  /** GET one stored person-search page: request_id + offset + limit (free; never a POST replay). */
  readSearchPage(requestId: string, offset: number, limit: number): Promise<Reply>;
  /** GET /usage: the usage statistics, or a ServiceError. */
  usage(query?: UsageQuery): Promise<Record<string, unknown>>;
  /** POST /person/enrichment/feedback: synchronous insert. */
  feedback(body: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** A shared pool; close() when the process ends. */
export class ServiceHttp {
  private readonly pool: Pool;
  private readonly prefix: string;

  constructor(readonly options: HttpOptions) {
    const url = new URL(options.baseUrl);
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: options.connections,
      // Shorter than common server idle timeouts, so a POST never lands on a socket the server
      // is closing (that would look like "maybe sent" and end the submit as outcome unknown).
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 10_000,
      connect: { timeout: options.connectTimeoutMs ?? Math.min(10_000, options.timeoutMs) },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  clientFor(credentials: Credentials): ServiceClient {
    const send = (
      method: 'GET' | 'POST',
      path: string,
      query?: Record<string, string | number | undefined>,
      body?: unknown,
    ) => this.send(credentials, method, path, query, body);
    return {
      submit: (endpoint, params) => send('POST', endpoint.path, undefined, params),
      poll: (endpoint, requestId) => send('GET', endpoint.path, { request_id: requestId }),
      readSearchPage: (requestId, offset, limit) =>
        send('GET', '/person/search', { request_id: requestId, offset, limit }),
      usage: async (query = {}) => syncData(await send('GET', '/usage', { ...query })),
      feedback: async (body) =>
        syncData(await send('POST', '/person/enrichment/feedback', undefined, body)),
    };
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async send(
    credentials: Credentials,
    method: 'GET' | 'POST',
    path: string,
    query: Record<string, string | number | undefined> | undefined,
    body: unknown,
  ): Promise<Reply> {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) search.set(k, String(v));
    const qs = search.toString();
    const headers: Record<string, string> = {
      accept: 'application/json',
      'x-api-key': credentials.key,
      'x-api-secret': credentials.secret,
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const res = await this.pool.request({
        method,
        path: this.prefix + path + (qs ? `?${qs}` : ''),
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.body.text();
      const retryAfter = res.headers['retry-after'];
      const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
      return {
        httpStatus: res.statusCode,
        body: parseJson(text),
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      };
    } catch (err) {
      throw transportErrorOf(err);
    }
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A synchronous reply: the envelope's data on success, a ServiceError otherwise. */
function syncData(reply: Reply): Record<string, unknown> {
  const env = parseEnvelope(reply.body);
  if (env && env.success && reply.httpStatus < 300) return env.data ?? {};
  const fallback =
    reply.httpStatus === 429
      ? 'rate_limit_exceeded'
      : reply.httpStatus === 503
        ? 'service_unavailable'
        : env
          ? 'invalid_request'
          : 'invalid_response';
  const code = env?.error?.code ?? fallback;
  throw new ServiceError(
    pcdsErrorCode(code),
    reply.httpStatus,
    `${code} (HTTP ${reply.httpStatus})`,
    reply.retryAfterMs,
  );
}

// The service's MCP endpoint as a ServiceClient: a tool call is the submit, check_status the poll,
// through the official MCP SDK (its Client over the Streamable HTTP transport). Every answer is
// turned into the Reply the HTTP API would have given (contract/mcp-replies), so the same
// classifiers, throttle and no-double-submit rules apply. Credentials are the key pair's headers
// or an OAuth access token from the worker's encrypted tokens file; none leaves this module.
import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** The SDK's own errors (no reply came): a closed connection, its request timeout. */
const CONNECTION_CLOSED: number = ErrorCode.ConnectionClosed;
const REQUEST_TIMEOUT: number = ErrorCode.RequestTimeout;
import {
  PcdsError,
  parseRetryAfter,
  replyOfCheckStatus,
  replyOfMcpHttpFailure,
  replyOfRpcError,
  replyOfToolStart,
  type EndpointDef,
  type McpTool,
  type Reply,
  type ToolDocument,
} from '../contract/index.js';
import { McpAuthError, type McpTokenSource } from './mcp-oauth.js';
import { McpUnsupportedError, TransportError, transportErrorOf } from './errors.js';
import type { Credentials, ServiceClient } from './service-client.js';

export type McpCredentials =
  ({ kind: 'keys' } & Credentials) | { kind: 'oauth'; tokens: McpTokenSource };

export interface McpOptions {
  baseUrl: string;
  /** Reply timeout of one request (the handshake included). */
  timeoutMs: number;
}

/** What the fetch underneath saw of the one request in flight: a refusal, or a 2xx reply. */
interface Seen {
  failure?: { status: number; text?: string; retryAfterMs?: number };
  replied?: boolean;
}

const seenByCall = new AsyncLocalStorage<Seen>();

const CLIENT_INFO = { name: 'pcds-orchestrator', version: '0.1.0' };

/** The marker our own reply timeout aborts with (the SDK rejects the call with it). */
class ReplyTimeout extends PcdsError {
  override name = 'ReplyTimeout';
  constructor() {
    super('transport_error', 'no reply within the timeout');
  }
}

/** The JSON document of a tool's text content item, or undefined. */
function documentOf(result: unknown): ToolDocument | undefined {
  const content = (result as { content?: unknown }).content;
  if (!Array.isArray(content)) return undefined;
  const text = (content as { type?: unknown; text?: unknown }[]).find(
    (c) => c.type === 'text' && typeof c.text === 'string',
  )?.text as string | undefined;
  if (text === undefined) return undefined;
  try {
    const doc: unknown = JSON.parse(text);
    return typeof doc === 'object' && doc !== null && !Array.isArray(doc)
      ? (doc as ToolDocument)
      : undefined;
  } catch {
    return undefined;
  }
}

const rawMessage = (err: McpError) => err.message.replace(/^MCP error -?\d+: /, '');

export class ServiceMcp {
  private readonly url: URL;

  constructor(readonly options: McpOptions) {
    this.url = new URL(`${options.baseUrl.replace(/\/+$/, '')}/mcp`);
  }

  clientFor(credentials: McpCredentials): ServiceClient & { close(): Promise<void> } {
    const session = new McpSession(this.url, this.options.timeoutMs, credentials);
    const unsupported = (what: string) => () =>
      Promise.reject(
        new McpUnsupportedError(
          `${what} has no MCP tool (the MCP endpoint serves the seven data tools and check_status): use the HTTP transport`,
        ),
      );
    return {
      submit: (endpoint, params) => session.submit(endpoint, params),
      poll: (endpoint, requestId) => session.poll(endpoint, requestId),
      readSearchPage: unsupported('reading a stored person_search page'),
      usage: unsupported('usage'),
      feedback: unsupported('person_enrichment_feedback'),
      close: () => session.close(),
    };
  }
}

/** One key's connected MCP client, made on first use and again after its connection is lost. */
class McpSession {
  private connecting?: Promise<Client>;

  constructor(
    private readonly url: URL,
    private readonly timeoutMs: number,
    private readonly credentials: McpCredentials,
  ) {}

  async submit(endpoint: EndpointDef, params: Record<string, unknown>): Promise<Reply> {
    const tool = this.toolOf(endpoint);
    const answer = await this.call(tool, params);
    return 'reply' in answer ? answer.reply : replyOfToolStart(answer.doc);
  }

  async poll(endpoint: EndpointDef, requestId: string): Promise<Reply> {
    const tool = this.toolOf(endpoint);
    const answer = await this.call('check_status', { request_id: requestId, endpoint: tool });
    return 'reply' in answer ? answer.reply : replyOfCheckStatus(endpoint, requestId, answer.doc);
  }

  async close(): Promise<void> {
    const c = this.connecting;
    this.connecting = undefined;
    if (c) await c.then((client) => client.close()).catch(() => undefined);
  }

  private toolOf(endpoint: EndpointDef): McpTool {
    if (!endpoint.mcpTool)
      throw new McpUnsupportedError(
        `${endpoint.name} has no MCP tool (the MCP endpoint serves the seven data tools): use the HTTP transport`,
      );
    return endpoint.mcpTool;
  }

  /**
   * One tools/call. An answer of the endpoint (a tool output, a JSON-RPC error, an HTTP refusal)
   * is returned; a request that got no answer throws a TransportError saying whether it may have
   * been received: only a failure before the request left (connect) is safe to send again.
   */
  private async call(
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ doc: ToolDocument | undefined } | { reply: Reply }> {
    let client: Client;
    try {
      client = await this.connected();
    } catch (err) {
      const refused = this.refusal(err, {});
      if (refused) return { reply: refused };
      // The handshake failed: the tool call itself was never sent.
      throw new TransportError(
        'connect',
        err instanceof ReplyTimeout ? 'reply_timeout' : transportErrorOf(err).causeCode,
      );
    }
    const seen: Seen = {};
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new ReplyTimeout()), this.timeoutMs);
    try {
      const result = await seenByCall.run(seen, () =>
        client.callTool({ name, arguments: args }, undefined, {
          signal: abort.signal,
          // Our own timer decides; the SDK's is only a backstop.
          timeout: this.timeoutMs + 5_000,
        }),
      );
      return { doc: documentOf(result) };
    } catch (err) {
      const refused = this.refusal(err, seen);
      if (refused) return { reply: refused };
      if (err instanceof ReplyTimeout) throw new TransportError('after_send', 'reply_timeout');
      if (err instanceof McpError) {
        // The connection closed or the SDK gave up waiting: the request may have been received.
        void this.reset(client);
        throw new TransportError(
          'after_send',
          `mcp_${err.code === CONNECTION_CLOSED ? 'connection_closed' : 'no_reply'}`,
        );
      }
      // A 2xx whose body could not be read as JSON-RPC: the job may exist.
      if (seen.replied && !(err instanceof TypeError))
        return { reply: { httpStatus: 200, body: undefined } };
      throw transportErrorOf(err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The endpoint's own answer inside an error: an HTTP refusal, a JSON-RPC error, no grant. */
  private refusal(err: unknown, seen: Seen): Reply | undefined {
    if (err instanceof McpAuthError)
      return {
        httpStatus: 401,
        body: { success: false, error: { code: err.code, message: err.message } },
      };
    if (seen.failure)
      return replyOfMcpHttpFailure(
        seen.failure.status,
        seen.failure.text,
        seen.failure.retryAfterMs,
      );
    if (
      err instanceof McpError &&
      seen.replied &&
      err.code !== CONNECTION_CLOSED &&
      err.code !== REQUEST_TIMEOUT
    )
      return replyOfRpcError({ code: err.code, message: rawMessage(err), data: err.data });
    return undefined;
  }

  private async reset(client: Client): Promise<void> {
    const c = this.connecting;
    if (c && (await c.catch(() => undefined)) === client) this.connecting = undefined;
    await client.close().catch(() => undefined);
  }

  private connected(): Promise<Client> {
    if (!this.connecting) {
      const attempt = (async () => {
        const transport = new StreamableHTTPClientTransport(this.url, { fetch: this.fetch });
        const client = new Client(CLIENT_INFO);
        client.onclose = () => {
          if (this.connecting === attempt) this.connecting = undefined;
        };
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(new ReplyTimeout()), this.timeoutMs);
        try {
          await client.connect(transport, {
            signal: abort.signal,
            timeout: this.timeoutMs + 5_000,
          });
        } finally {
          clearTimeout(timer);
        }
        return client;
      })();
      this.connecting = attempt;
      attempt.catch(() => {
        if (this.connecting === attempt) this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  /** Every request of the transport: credentials added, an expired token refreshed once. */
  private readonly fetch: FetchLike = async (url, init) => {
    const send = (token?: string) => {
      const headers = new Headers(init?.headers);
      if (this.credentials.kind === 'keys') {
        headers.set('x-api-key', this.credentials.key);
        headers.set('x-api-secret', this.credentials.secret);
      } else headers.set('authorization', `Bearer ${token}`);
      return fetch(url, { ...init, headers });
    };
    let res: Response;
    if (this.credentials.kind === 'keys') res = await send();
    else {
      const tokens = this.credentials.tokens;
      const token = await tokens.accessToken();
      res = await send(token);
      // A 401 is answered before anything runs, so the same request goes again once.
      if (res.status === 401) {
        await res.body?.cancel();
        res = await send(await tokens.refreshAfter(token));
      }
    }
    const seen = seenByCall.getStore();
    if (seen && init?.method === 'POST') {
      if (res.ok) seen.replied = true;
      else {
        const text = await res
          .clone()
          .text()
          .catch(() => undefined);
        const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
        seen.failure = {
          status: res.status,
          ...(text !== undefined ? { text } : {}),
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        };
      }
    }
    return res;
  };
}

// The worker's clients, one per configured key id and transport, over one shared pool. Secrets
// stay in here: callers name a key by its id and a transport by its name.
import { requireKeys, type Config } from '../config.js';
import { PcdsError, type Transport } from '../contract/index.js';
import type { McpCredentials } from './mcp-client.js';
import { EncryptedTokenFile, tokenFilePaths } from './mcp-token-file.js';
import { ServiceHttp, type ServiceClient } from './service-client.js';

type ClosableClient = ServiceClient & { close(): Promise<void> };

/**
 * A client of the MCP transport whose modules (the MCP SDK, a fifth of a CLI command's start-up)
 * load on its first request: most processes never call over MCP.
 */
function lazyMcpClient(
  options: { baseUrl: string; timeoutMs: number },
  credentials: () => Promise<McpCredentials>,
): ClosableClient {
  let client: Promise<ClosableClient> | undefined;
  const make = async () => {
    const { ServiceMcp } = await import('./mcp-client.js');
    return new ServiceMcp(options).clientFor(await credentials());
  };
  // A failed start is not kept: the next request tries again.
  const real = () =>
    (client ??= make().catch((err: unknown) => {
      client = undefined;
      throw err;
    }));
  return {
    submit: async (endpoint, params) => (await real()).submit(endpoint, params),
    poll: async (endpoint, requestId) => (await real()).poll(endpoint, requestId),
    readSearchPage: async (requestId, offset, limit) =>
      (await real()).readSearchPage(requestId, offset, limit),
    usage: async (query) => (await real()).usage(query),
    feedback: async (body) => (await real()).feedback(body),
    close: async () => {
      const started = await client?.catch(() => undefined);
      await started?.close();
    },
  };
}

export interface ServiceClients {
  /**
   * The client of a key id (the first configured key when omitted) over a transport (HTTP by
   * default). Throws for an unknown id.
   */
  get(keyId?: string, transport?: Transport): ServiceClient;
  /** Resolves an optional key id to the id actually used. */
  resolveKeyId(keyId?: string): string;
  keyIds(): string[];
  close(): Promise<void>;
}

export class UnknownKeyError extends PcdsError {
  override name = 'UnknownKeyError';
  constructor(message: string) {
    super('unknown_key', message);
  }
}

/** The worker's encrypted OAuth tokens file for the MCP endpoint. */
export function mcpTokenFile(config: Config): EncryptedTokenFile {
  const paths = tokenFilePaths(config.PCDS_DATA_DIR, config.PCDS_MCP_TOKENS_FILE);
  return new EncryptedTokenFile({
    ...paths,
    ...(config.PCDS_MCP_TOKEN_KEY ? { key: config.PCDS_MCP_TOKEN_KEY } : {}),
  });
}

export interface ServiceClientsOptions {
  /** Wraps each client as it is handed out: the worker and the CLI count requests in metrics so. */
  wrap?: (client: ServiceClient, keyId: string, transport: Transport) => ServiceClient;
}

export function createServiceClients(
  config: Config,
  options: ServiceClientsOptions = {},
): ServiceClients {
  const wrap = options.wrap ?? ((client: ServiceClient) => client);
  const keys = requireKeys(config);
  const http = new ServiceHttp({
    baseUrl: config.PCDS_BASE_URL,
    connections: config.PCDS_HTTP_CONNECTIONS,
    timeoutMs: config.PCDS_HTTP_TIMEOUT_MS,
  });
  const clients = new Map(
    keys.map((k) => [k.id, wrap(http.clientFor({ key: k.key, secret: k.secret }), k.id, 'http')]),
  );
  // MCP sessions are made on first use: a worker that never calls over MCP opens none.
  const mcpOptions = { baseUrl: config.PCDS_BASE_URL, timeoutMs: config.PCDS_HTTP_TIMEOUT_MS };
  const mcpClients = new Map<string, ClosableClient>();
  const tokenFile = config.PCDS_MCP_AUTH === 'oauth' ? mcpTokenFile(config) : undefined;
  const mcpClientOf = (keyId: string) => {
    let c = mcpClients.get(keyId);
    if (!c) {
      const k = keys.find((x) => x.id === keyId)!;
      c = lazyMcpClient(mcpOptions, async () =>
        tokenFile
          ? {
              kind: 'oauth',
              tokens: new (await import('./mcp-oauth.js')).OAuthGrantTokens(tokenFile, keyId),
            }
          : { kind: 'keys', key: k.key, secret: k.secret },
      );
      mcpClients.set(keyId, c);
    }
    return c;
  };
  const resolveKeyId = (keyId?: string): string => {
    const id = keyId ?? keys[0].id;
    if (!clients.has(id)) {
      throw new UnknownKeyError(
        `no key with id "${id}" is configured; known ids: ${[...clients.keys()].join(', ')}`,
      );
    }
    return id;
  };
  return {
    get: (keyId, transport = 'http') => {
      const id = resolveKeyId(keyId);
      return transport === 'mcp' ? wrap(mcpClientOf(id), id, 'mcp') : clients.get(id)!;
    },
    resolveKeyId,
    keyIds: () => [...clients.keys()],
    close: async () => {
      await Promise.all([...mcpClients.values()].map((c) => c.close()));
      await http.close();
    },
  };
}

// The worker's clients, one per configured key id, over one shared pool. Secrets stay in here:
// callers name a key by its id.
import { requireKeys, type Config } from '../config.js';
import { PcdsError } from '../contract/index.js';
import { ServiceHttp, type ServiceClient } from './service-client.js';

export interface ServiceClients {
  /** The client of a key id; the first configured key when omitted. Throws for an unknown id. */
  get(keyId?: string): ServiceClient;
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

export function createServiceClients(config: Config): ServiceClients {
  const keys = requireKeys(config);
  const http = new ServiceHttp({
    baseUrl: config.PCDS_BASE_URL,
    connections: config.PCDS_HTTP_CONNECTIONS,
    timeoutMs: config.PCDS_HTTP_TIMEOUT_MS,
  });
  const clients = new Map(
    keys.map((k) => [k.id, http.clientFor({ key: k.key, secret: k.secret })]),
  );
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
    get: (keyId) => clients.get(resolveKeyId(keyId))!,
    resolveKeyId,
    keyIds: () => [...clients.keys()],
    close: () => http.close(),
  };
}

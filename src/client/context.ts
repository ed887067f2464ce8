// What every view of one client shares, whichever tenant it works for: the Temporal client and
// its task queue, the store, the call defaults, the id secret and the cache scope. Opened once by
// createPcdsClient; closing it closes only what it opened itself.
import { Client } from '@temporalio/client';
import { checkedCacheScope } from './request-checks.js';
import type { PcdsClientOptions } from './api.js';
import type { CacheScope } from '../calls/cache-policy.js';
import { lazyBatchStore, openStoreFromEnv, type LazyBatchStore } from '../store/index.js';
import { connectTemporalClient } from '../temporal/connection.js';
import { dataConverterFromEnv } from '../temporal/data-converter.js';
import { idSecretFromEnv, idSecretFromSettings, type IdSecret } from '../codec/idempotency.js';

export interface ClientContext {
  temporal: Client;
  taskQueue: string;
  store: LazyBatchStore;
  defaults: NonNullable<PcdsClientOptions['defaults']>;
  idSecret: IdSecret | undefined;
  cacheScope: CacheScope;
}

/**
 * Connects (unless a connection is given) and gathers the shared parts. `close` closes the store
 * and the connection when this context opened them, once however often it is called.
 */
export async function openClientContext(
  options: PcdsClientOptions,
): Promise<{ context: ClientContext; close: () => Promise<void> }> {
  // A bad cache scope is refused before anything connects.
  const cacheScope = options.cacheScope ?? checkedCacheScope(process.env.PCDS_CACHE_SCOPE);
  const dataConverter = options.dataConverter ?? dataConverterFromEnv();
  const ownsConnection = !options.connection;
  const connection =
    options.connection ??
    (await connectTemporalClient({
      address: options.address ?? '127.0.0.1:7233',
      ...(options.namespace ? { namespace: options.namespace } : {}),
      ...(options.tls !== undefined ? { tls: options.tls } : {}),
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    }));
  const temporal = new Client({
    connection,
    namespace: options.namespace ?? 'default',
    dataConverter,
  });
  const ownsStore = !options.store;
  const store = options.store ?? lazyBatchStore(() => openStoreFromEnv());
  const idSecret =
    options.idSecret !== undefined
      ? idSecretFromSettings({ PCDS_ID_SECRET: options.idSecret })
      : idSecretFromEnv();
  let closedBy: Promise<void> | undefined;
  const close = () =>
    (closedBy ??= (async () => {
      if (ownsStore) await store.close();
      if (ownsConnection) await connection.close();
    })());
  return {
    context: {
      temporal,
      taskQueue: options.taskQueue ?? 'pcds',
      store,
      defaults: options.defaults ?? {},
      idSecret,
      cacheScope,
    },
    close,
  };
}

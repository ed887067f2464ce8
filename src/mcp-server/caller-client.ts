// The client a `pcds mcp` HTTP caller acts through: the client of its tenant (its token's label),
// so the ids and idempotency keys it names are its own; what it starts carries its token's id in
// the workflow memo, and a call, batch or export started by another caller reads as not found (the
// same answer as an id that names nothing), so one caller never reads or steers another's work.
import { WorkflowNotFoundError } from '@temporalio/client';
import { batchNotFound } from '../client/batch-launch.js';
import { PcdsUsageError, type PcdsClient } from '../client.js';
import type { EndpointResult } from '../contract/index.js';
import { isSoleDefaultToken, type McpCaller, type McpToken } from './access.js';

/** The memo field naming the `pcds mcp` caller (its token id, never the token). */
export const CALLER_MEMO = 'pcdsMcpCaller';

interface Describable {
  workflowId: string;
  describe(): Promise<{ memo?: Record<string, unknown> }>;
}

export interface CallerScope {
  caller: McpCaller;
  /**
   * Whether work with no caller in its memo (started by the CLI or over stdio) is visible: only
   * when the server has a single token, the operator's own.
   */
  untaggedVisible: boolean;
}

/**
 * The scope of a caller among the server's tokens. Untagged work is the operator's: visible only
 * to the lone `default` token (PCDS_MCP_TOKEN or the generated one), never to a caller named in
 * PCDS_MCP_TOKENS, even alone (a token handed to someone else).
 */
export const callerScopeOf = (tokens: readonly McpToken[], caller: McpCaller): CallerScope => ({
  caller,
  untaggedVisible: isSoleDefaultToken(tokens),
});

/** Whether work with this memo is the caller's to see: its own, or untagged when allowed. */
export const visibleTo =
  (scope: CallerScope) =>
  (m: Record<string, unknown> | undefined): boolean => {
    const owner = m?.[CALLER_MEMO];
    return owner === undefined ? scope.untaggedVisible : owner === scope.caller.tokenId;
  };

/** The tenant a caller works as: its token's label (`default`, the operator's token, included). */
export const tenantOfCaller = (caller: McpCaller): string => caller.tokenId;

/**
 * One ownership verdict per handle: `ensure` runs an action only on work `visible` lets the caller
 * see, else throws the handle's not-found error; `guarded` is the raw handle, each method asking
 * first. `notFound` is the error an unknown id gives there.
 */
function ownership<W extends Describable>(
  workflow: W,
  visible: (memo: Record<string, unknown> | undefined) => boolean,
) {
  let verdict: ReturnType<W['describe']> | undefined;
  const described = () =>
    (verdict ??= workflow.describe() as ReturnType<W['describe']>) as Promise<
      Awaited<ReturnType<W['describe']>>
    >;
  const ensure = async <T>(notFound: () => Error, then: () => Promise<T>): Promise<T> => {
    let d: Awaited<ReturnType<W['describe']>>;
    try {
      d = await described();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw notFound();
      throw err;
    }
    if (!visible(d.memo)) throw notFound();
    return then();
  };
  const rawNotFound = () =>
    new WorkflowNotFoundError('workflow not found', workflow.workflowId, undefined);
  // The raw handle too: every method asks first; describe answers from the verdict.
  const guarded = new Proxy(workflow, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'describe') return () => ensure(rawNotFound, described);
      return (...args: unknown[]) =>
        ensure(rawNotFound, () => Promise.resolve(value.apply(target, args) as unknown));
    },
  });
  return { ensure, guarded };
}

/**
 * The client a caller acts through, over the server's client: the client of the caller's tenant
 * (its ids and keys its own), which sees only the caller's work.
 */
export function callerScopedClient(server: PcdsClient, scope: CallerScope): PcdsClient {
  const client = server.withTenant(tenantOfCaller(scope.caller));
  const memo = { [CALLER_MEMO]: scope.caller.tokenId };
  const visible = visibleTo(scope);

  const getCall: PcdsClient['getCall'] = <R>(workflowId: string) => {
    const inner = client.getCall<R>(workflowId);
    const { ensure, guarded } = ownership(inner.workflow, visible);
    const notFound = () =>
      new PcdsUsageError('call_not_found', `no call with workflow id ${workflowId}`);
    return {
      workflowId,
      workflow: guarded,
      result: () => ensure(notFound, () => inner.result()),
      state: () => ensure(notFound, () => inner.state()),
      waiting: () => ensure(notFound, () => inner.waiting()),
    };
  };

  const getSearchExport: PcdsClient['getSearchExport'] = (exportId) => {
    const inner = client.getSearchExport(exportId);
    const { ensure, guarded } = ownership(inner.workflow, visible);
    const notFound = () =>
      new PcdsUsageError('export_not_found', `no search export with id ${exportId}`);
    return { ...inner, workflow: guarded, result: () => ensure(notFound, () => inner.result()) };
  };

  const getBatch: PcdsClient['getBatch'] = <R>(batchId: string) => {
    const inner = client.getBatch<R>(batchId);
    const { ensure, guarded } = ownership(inner.workflow, visible);
    const notFound = () => batchNotFound(inner.batchId);
    return {
      // The caller's own id (without its tenant), as it named the batch.
      batchId: inner.batchId,
      workflowId: inner.workflowId,
      workflow: guarded,
      status: () => ensure(notFound, () => inner.status()),
      pause: (reason) => ensure(notFound, () => inner.pause(reason)),
      resume: (options) => ensure(notFound, () => inner.resume(options)),
      setWindow: (width) => ensure(notFound, () => inner.setWindow(width)),
      cancel: () => ensure(notFound, () => inner.cancel()),
      result: () => ensure(notFound, () => inner.result()),
      async *results(query) {
        await ensure(notFound, async () => undefined);
        yield* inner.results(query);
      },
      export: (options) => ensure(notFound, () => inner.export(options)),
      writeOutputs: () => ensure(notFound, () => inner.writeOutputs()),
    };
  };

  const startCall: PcdsClient['startCall'] = async (endpoint, params, options = {}) => {
    const handle = await client.startCall(endpoint, params, {
      ...options,
      memo: { ...options.memo, ...memo },
    });
    return getCall<EndpointResult<typeof endpoint>>(handle.workflowId);
  };

  const startBatch: PcdsClient['startBatch'] = async (request) => {
    const handle = await client.startBatch({ ...request, memo: { ...request.memo, ...memo } });
    return getBatch(handle.batchId);
  };

  return {
    ...client,
    withTenant() {
      throw new PcdsUsageError(
        'invalid_options',
        "a caller's client works for its own tenant only",
      );
    },
    startCall,
    call: async (endpoint, params, options) =>
      (await startCall(endpoint, params, options)).result(),
    getCall,
    startSearchExport: async (params, options) => {
      const handle = await client.startSearchExport(params, {
        ...options,
        memo: { ...options.memo, ...memo },
      });
      return getSearchExport(handle.exportId);
    },
    getSearchExport,
    startBatch,
    getBatch,
  };
}

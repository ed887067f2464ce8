// A signal that outlives many Temporal client calls: the client adds an 'abort' listener to the
// signal it runs under for each gRPC call and never removes it (a long batch's watch gathered
// hundreds: MaxListenersExceededWarning). withCallSignal leaves the caller's signal as it found
// it, and still cancels a call when that signal aborts.
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client, Connection } from '@temporalio/client';
import { withCallSignal } from '../../src/temporal/call-signal.js';
import { connectClient } from '../harness/temporal.js';

let client: Client;
let connection: Connection;
beforeAll(async () => {
  ({ client, connection } = await connectClient());
});
afterAll(async () => {
  await connection?.close();
});

const CALLS = 12;
const systemInfo = () => client.workflowService.getSystemInfo({}).then(() => undefined);

describe('withCallSignal', () => {
  it('the client under a signal given as it is keeps a listener on it for every call', async () => {
    const outlives = new AbortController();
    for (let i = 0; i < CALLS; i++) await client.withAbortSignal(outlives.signal, systemInfo);
    expect(getEventListeners(outlives.signal, 'abort')).toHaveLength(CALLS);
  });

  it('under withCallSignal, the signal keeps no listener once the calls are done', async () => {
    const outlives = new AbortController();
    for (let i = 0; i < CALLS; i++) await withCallSignal(client, outlives.signal, systemInfo);
    expect(getEventListeners(outlives.signal, 'abort')).toHaveLength(0);
  });

  it("a call is cancelled when the caller's signal aborts, and one on an aborted signal is never made", async () => {
    const stop = new AbortController();
    // A long poll the server holds open for a minute: only cancelling it ends it early.
    const waiting = withCallSignal(client, stop.signal, () =>
      connection.withDeadline(Date.now() + 70_000, () =>
        client.workflowService.pollWorkflowTaskQueue({
          namespace: client.options.namespace,
          taskQueue: { name: `call-signal-${Date.now()}` },
        }),
      ),
    );
    setTimeout(() => stop.abort(), 200);
    await expect(waiting).rejects.toThrow(/cancel/i);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    await expect(withCallSignal(client, stop.signal, systemInfo)).rejects.toThrow(/cancel/i);
  });
});

// The Temporal server goes down while a submit's 202 is on its way: the activity cannot report
// its completion and the server times the attempt out. The accepted job is handed to the call
// anyway (an acknowledged heartbeat, else the submitAccepted update), so the call reads its job:
// one submit, no submit_outcome_unknown.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { loadConfig } from '../../src/config.js';
import { sampleRows, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { unthrottled } from '../../src/throttle/permits.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import { findOrInstallTemporalCli } from '../../src/temporal/cli-binary.js';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { endpointCall } from '../../src/workflows/endpoint-call.js';
import { uniqueTaskQueue, withWorker } from '../harness/temporal.js';

let server: DevServer | undefined;
let emu: RunningEmulator | undefined;
let dir: string | undefined;
afterAll(async () => {
  await server?.stop();
  await emu?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const HEARTBEAT_TIMEOUT_MS = 30_000;

it('keeps an accepted job whose submit could not report to a server that was down', async () => {
  dir = await mkdtemp(join(tmpdir(), 'pcds-outage-'));
  const dbFile = join(dir, 'temporal.db');
  const cliPath = await findOrInstallTemporalCli();
  server = await startDevServer({ cliPath, headless: true, dbFile });
  const address = server.address;
  const port = Number(address.split(':')[1]);
  emu = await startEmulator({
    port: 0,
    latency: { queuedMs: 20, processingMs: 40 },
    limits: { enabled: false },
  });
  const config = loadConfig({
    PCDS_BASE_URL: emu.url,
    PCDS_API_KEY: emu.devKey.key,
    PCDS_API_SECRET: emu.devKey.secret,
    PCDS_THROTTLE: 'off',
  });
  const clients = createServiceClients(config);
  const activities = createActivities({ config, clients, permits: unthrottled });
  const taskQueue = uniqueTaskQueue('outage');
  try {
    await withWorker(
      { activities, address, taskQueue, namespace: server.namespace },
      async ({ client }) => {
        // Replies take 6 s: the server goes down while the accepted submit is on its way back.
        emu!.setFaults({ slowReplyShare: 1, slowReplyMs: 6_000 });
        const handle = await client.workflow.start(endpointCall, {
          taskQueue,
          workflowId: `outage-${taskQueue}`,
          args: [
            {
              endpoint: 'person_enrichment',
              params: { email: sampleRows({ rows: 1, unknownShare: 0 })[0].email },
              pollIntervalMs: 200,
            },
          ],
        });
        await expect.poll(() => emu!.stats().jobsSubmitted, { timeout: 20_000 }).toBe(1);
        // Killed, as in a crash: no graceful shutdown that would still take the reply.
        process.kill(server!.pid, 'SIGKILL');
        await server!.stop();
        emu!.setFaults({ slowReplyShare: 0 });
        // Down for longer than the heartbeat timeout: on its return the server times the
        // submit's attempt out, and the activity's report of its completion is refused.
        await new Promise((r) => setTimeout(r, HEARTBEAT_TIMEOUT_MS + 15_000));
        server = await startDevServer({ cliPath, headless: true, dbFile, port });
        const outcome = await handle.result();
        expect(outcome.outcome).not.toBe('failed');
        expect(emu!.stats().jobsSubmitted).toBe(1);
      },
    );
  } finally {
    await clients.close();
  }
}, 150_000);

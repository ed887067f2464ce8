// Calls over MCP signed in with OAuth, run by real worker processes: the grant from mcp-login is
// refreshed when the emulator's short-lived access token expires, the rotated refresh token is
// what a restarted worker uses (the spent one is refused), and no token is ever in clear in the
// tokens file or in workflow history.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPcdsClient, type PcdsClient } from '../../src/client.js';
import { loadConfig, type Config } from '../../src/config.js';
import { sampleRows, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { mcpLogin } from '../../src/http/mcp-oauth.js';
import type { StoredGrant } from '../../src/http/mcp-token-file.js';
import { mcpTokenFile } from '../../src/http/service-clients.js';
import {
  connectClient,
  decodedHistory,
  testNamespace,
  uniqueTaskQueue,
} from '../harness/temporal.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import { historyText } from './call-env.js';

/** 20 times faster than the service: access tokens live 3 s. */
const TIME_SCALE = 20;
const ACCESS_TTL_MS = 60_000;
const knownEmail = sampleRows({ rows: 1 })[0].email;

let emu: RunningEmulator;
let env: Record<string, string>;
let config: Config;

beforeAll(async () => {
  emu = await startEmulator({
    port: 0,
    timeScale: TIME_SCALE,
    limits: { enabled: false },
    mcpOAuth: { accessTokenTtlMs: ACCESS_TTL_MS },
  });
  env = {
    PCDS_BASE_URL: emu.url,
    PCDS_API_KEYS: JSON.stringify([emu.devKey]),
    PCDS_THROTTLE: 'off',
    PCDS_MCP_AUTH: 'oauth',
    PCDS_DATA_DIR: mkdtempSync(join(tmpdir(), 'pcds-mcp-oauth-')),
  };
  config = loadConfig(env);
});
afterAll(async () => {
  await emu?.stop();
});

const grantOf = async (): Promise<StoredGrant> =>
  (await mcpTokenFile(config).read()).grants[emu.devKey.id];

async function kill(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null) return;
  worker.kill('SIGKILL');
  await once(worker, 'exit');
}

describe('MCP calls with OAuth', () => {
  it(
    'refresh expired tokens, carry the rotated one across a worker restart, and keep tokens out of clear text',
    { timeout: 120_000 },
    async () => {
      const login = await mcpLogin({
        baseUrl: emu.url,
        keyId: emu.devKey.id,
        file: mcpTokenFile(config),
      });
      expect(login.scope).toBe('svc.read svc.search svc.answer');
      const first = await grantOf();
      expect(first.refreshToken).toBeTruthy();

      const taskQueue = uniqueTaskQueue('mcp-oauth');
      const { connection } = await connectClient();
      const client: PcdsClient = await createPcdsClient({
        connection,
        namespace: testNamespace(),
        taskQueue,
        // Every call must reach the service: the result cache is skipped.
        defaults: { pollIntervalMs: 100, maxWaitMs: 30_000, transport: 'mcp', cache: false },
      });
      const handles: Awaited<ReturnType<PcdsClient['startCall']>>[] = [];
      const grants = [first];
      const histories: string[] = [];
      let worker = await spawnWorkerProcess(taskQueue, env);
      try {
        const call = async () => {
          const handle = await client.startCall('person_enrichment', { email: knownEmail });
          handles.push(handle);
          return handle.result();
        };
        expect(await call()).toMatchObject({ outcome: 'found' });
        // The access token expires: the next call refreshes it, rotating the refresh token.
        await sleep(ACCESS_TTL_MS / TIME_SCALE + 500);
        expect(await call()).toMatchObject({ outcome: 'found' });
        const rotated = await grantOf();
        grants.push(rotated);
        expect(rotated.refreshToken).not.toBe(first.refreshToken);
        expect(rotated.accessToken).not.toBe(first.accessToken);

        // A new worker process, after the token expired again, continues with the rotated pair.
        await kill(worker);
        await sleep(ACCESS_TTL_MS / TIME_SCALE + 500);
        worker = await spawnWorkerProcess(taskQueue, env);
        expect(await call()).toMatchObject({ outcome: 'found' });
        const afterRestart = await grantOf();
        grants.push(afterRestart);
        expect(afterRestart.refreshToken).not.toBe(rotated.refreshToken);
        for (const handle of handles)
          histories.push(historyText(await decodedHistory(await handle.workflow.fetchHistory())));
      } finally {
        await kill(worker);
        await client.close();
        await connection.close();
      }
      // Every call went through MCP tool calls.
      expect(emu.stats(emu.devKey.id).requests['POST /mcp']).toBeGreaterThanOrEqual(6);
      expect(emu.stats(emu.devKey.id).requests['POST /person/enrichment']).toBeUndefined();

      const secrets = grants.flatMap((g) => [g.accessToken, g.refreshToken!]);
      // The tokens file is sealed, and its key file is the owner's only.
      const paths = mcpTokenFile(config);
      const sealed = readFileSync(paths.path, 'utf8');
      for (const s of secrets) expect(sealed).not.toContain(s);
      expect(sealed).not.toMatch(/mcp_(at|rt)_/);
      expect(statSync(`${paths.path}.key`).mode & 0o777).toBe(0o600);
      expect(statSync(paths.path).mode & 0o777).toBe(0o600);

      expect(histories).toHaveLength(3);
      for (const history of histories) {
        // The decoding works: the input's email (a payload) is readable in the text.
        expect(history).toContain(knownEmail);
        for (const s of secrets) expect(history).not.toContain(s);
        expect(history).not.toMatch(/mcp_(at|rt)_|Bearer/);
      }

      // The refresh token spent by the first worker is refused by the service.
      const refused = await fetch(`${emu.url}/mcp/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: first.refreshToken!,
          client_id: first.clientId,
        }).toString(),
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');
    },
  );
});

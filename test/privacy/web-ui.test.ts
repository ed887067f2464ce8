// What an operator sees in the Temporal Web UI of `pcds dev`, in a real browser (Debian's
// chromium driven by playwright-core): a batch row's input and result read in clear, decoded in
// the browser by the codec server the dev server's UI points at; with the codec server out of
// reach, the same page shows only ciphertext. The dev server's own log never holds the token.
// The list view filtered on PcdsState="throttled" shows calls waiting for permits, and none of
// them once they ended.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDevStack, type DevStack } from '../../src/cli/dev-stack.js';
import { lazyBatchStore, openStoreFromSettings } from '../../src/store/index.js';
import { createPcdsClient, type PcdsClient } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { dataConverterFromSettings } from '../../src/temporal/data-converter.js';
import { freeListenPort } from '../harness/ports.js';
import { installQuietRuntime } from '../harness/temporal.js';

const CHROMIUM = '/usr/bin/chromium';
/** base64 of "binary/encrypted", the encoding the UI shows on a payload it could not decode. */
const ENCRYPTED_ENCODING_B64 = Buffer.from('binary/encrypted').toString('base64');

const dir = mkdtempSync(join(tmpdir(), 'pcds-web-ui-'));
let stack: DevStack;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (as .ci/run does)`);
  installQuietRuntime();
  stack = await startDevStack({
    dataDir: dir,
    temporalPort: await freeListenPort(),
    uiPort: await freeListenPort(),
    emulatorPort: 0,
    codecPort: 0,
    webhookPort: 0,
    // Only what `pcds dev` would find in a fresh shell (the stack makes its own key), and a
    // throttle of 4 requests per 3 s "minute", so calls wait for permits.
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PCDS_RATE_PER_MINUTE: '4',
      PCDS_THROTTLE_TIME_SCALE: '20',
    },
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A client of the stack's worker, as a service would make one. */
function stackClient(
  connection: Connection,
  defaults?: { pollIntervalMs: number; maxWaitMs: number },
): Promise<PcdsClient> {
  return createPcdsClient({
    connection,
    namespace: stack.config.PCDS_TEMPORAL_NAMESPACE,
    taskQueue: stack.config.PCDS_TASK_QUEUE,
    dataConverter: dataConverterFromSettings(stack.config),
    // The stack's store, which its worker reads.
    store: lazyBatchStore(() => openStoreFromSettings(stack.config)),
    ...(defaults ? { defaults } : {}),
  });
}

describe('the Web UI of pcds dev', () => {
  it("reads a row's input and result in clear through the codec server, ciphertext without it", async () => {
    expect(stack.codecServer).toBeDefined();
    const connection = await Connection.connect({ address: stack.temporal.address });
    try {
      const pcds = await stackClient(connection);
      const [row] = sampleRows({ rows: 1 });
      writeFileSync(join(dir, 'in.csv'), `email\n${row.email}\n`);
      const batch = await pcds.startBatch({
        input: join(dir, 'in.csv'),
        output: join(dir, 'out.jsonl'),
      });
      await batch.result();
      const line = JSON.parse(readFileSync(join(dir, 'out.jsonl'), 'utf8')) as {
        outcome: string;
        result: { displayname: string; headline: string };
      };
      expect(line.outcome).toBe('found');
      const rowCalls = [];
      for await (const w of pcds.temporal.workflow.list({
        query: 'WorkflowType="pcdsEndpointCall"',
      }))
        rowCalls.push(w);
      expect(rowCalls).toHaveLength(1);
      const { workflowId, runId } = rowCalls[0];
      const url = `${stack.uiUrl}/namespaces/${stack.config.PCDS_TEMPORAL_NAMESPACE}/workflows/${encodeURIComponent(workflowId)}/${runId}/history`;

      const page = await browser.newPage();
      const decodeCalls: string[] = [];
      page.on('request', (r) => {
        if (r.url().startsWith(stack.codecServer!.url)) decodeCalls.push(r.url());
      });
      await page.goto(url);
      // The input (the row's email) and the result (the profile) are shown decoded.
      await page.getByText(row.email).first().waitFor({ timeout: 30_000 });
      await page.getByText(line.result.displayname).first().waitFor({ timeout: 10_000 });
      await page.getByText(line.result.headline).first().waitFor({ timeout: 10_000 });
      expect(decodeCalls.some((u) => new URL(u).pathname.endsWith('/decode'))).toBe(true);

      // The same page with the codec server out of reach: the payloads as stored, sealed.
      await page.route(`${stack.codecServer!.url}/**`, (route) => route.abort());
      await page.reload();
      await page.getByText(ENCRYPTED_ENCODING_B64).first().waitFor({ timeout: 30_000 });
      const sealed = await page.locator('body').innerText();
      expect(sealed).toContain('Input');
      expect(sealed).toContain('Result');
      for (const value of [row.email, line.result.displayname, line.result.headline])
        expect(sealed).not.toContain(value);
      await page.close();
    } finally {
      await connection.close();
    }

    // The endpoint the UI was given holds the token: neither the dev server's log nor its command
    // line (which every local user reads in `ps`) does; it came from a private environment file.
    const serverLog = readFileSync(join(dir, 'temporal.db.log'), 'utf8');
    expect(serverLog).toContain('--env-file');
    expect(serverLog).not.toContain(stack.codecServer!.token);
    const cmdline = readFileSync(`/proc/${stack.temporal.pid}/cmdline`, 'utf8');
    expect(cmdline).toContain('start-dev');
    expect(cmdline).not.toContain(stack.codecServer!.token);
  }, 120_000);

  it('lists calls waiting for permits under PcdsState="throttled" in the list view', async () => {
    const connection = await Connection.connect({ address: stack.temporal.address });
    const page = await browser.newPage();
    try {
      const pcds = await stackClient(connection, { pollIntervalMs: 100, maxWaitMs: 120_000 });
      // Enough calls to keep the key's throttle busy for half a minute, so some wait whatever
      // the machine's load while the page loads.
      const calls = await Promise.all(
        sampleRows({ rows: 24 }).map((r) =>
          pcds.startCall('person_enrichment', { email: r.email }),
        ),
      );
      const query = 'WorkflowType="pcdsEndpointCall" AND PcdsState="throttled"';
      const list = `${stack.uiUrl}/namespaces/${stack.config.PCDS_TEMPORAL_NAMESPACE}/workflows?query=${encodeURIComponent(query)}`;
      // The list view as an operator opens it: a throttled call's id shows up in it.
      const ids = new Set(calls.map((c) => c.workflowId));
      let shown: string | undefined;
      for (let attempt = 0; attempt < 30 && !shown; attempt++) {
        // Open the page when visibility has a throttled call to show (it follows shortly after).
        await vi.waitFor(
          async () => expect((await pcds.temporal.workflow.count(query)).count).toBeGreaterThan(0),
          { timeout: 20_000, interval: 100 },
        );
        await page.goto(list);
        await page.waitForLoadState('networkidle');
        const text = await page.locator('body').innerText();
        shown = [...ids].find((id) => text.includes(id));
      }
      expect(shown).toBeDefined();
      const outcomes = await Promise.all(calls.map((c) => c.result()));
      expect(outcomes.every((o) => o.outcome === 'found')).toBe(true);
      // Once they ended, the same list view shows none of them: the filter is what it shows.
      await page.goto(`${list}&refresh=${Date.now()}`);
      await page.waitForLoadState('networkidle');
      await page
        .getByText(/no results|no workflows/i)
        .first()
        .waitFor({ timeout: 30_000 });
      const after = await page.locator('body').innerText();
      expect([...ids].filter((id) => after.includes(id))).toEqual([]);
    } finally {
      await page.close();
      await connection.close();
    }
  }, 240_000);
});

// A small batch over the MCP transport writes the same lines as over HTTP (found, empty and bad
// rows alike), and its rows went to the service as MCP tool calls, never as HTTP submits; so do
// a compact batch's rows.
import { describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import {
  readOutput,
  sharedBatchEnv,
  startCsvBatch,
  tempDir,
  writeCsv,
  type BatchSummary,
} from './fixtures.js';

const env = sharedBatchEnv();
const dir = tempDir('mcp-batch');
const rows = sampleRows({ rows: 8, unknownShare: 0.25, badShare: 0.15, withName: true });
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

/** The lines without what differs from one run to another (the service's request ids). */
const comparable = async (path: string) =>
  (await readOutput(path)).map(({ requestId: _id, ...line }) => line).sort((a, b) => a.row - b.row);

describe('batch over MCP', () => {
  it('writes the same lines as over HTTP, through tool calls only', async () => {
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const options = { window: 4, pollIntervalMs: 50 };
      const overHttp = await startCsvBatch(client, taskQueue, 'over-http', input, options);
      const httpSummary: BatchSummary = await overHttp.handle.result();
      const stats = () => env.emu.stats(env.emu.devKey.id).requests;
      const httpSubmits = stats()['POST /person/enrichment'] ?? 0;
      const mcpBefore = stats()['POST /mcp'] ?? 0;

      const overMcp = await startCsvBatch(client, taskQueue, 'over-mcp', input, {
        ...options,
        transport: 'mcp',
      });
      const mcpSummary: BatchSummary = await overMcp.handle.result();
      expect(mcpSummary).toMatchObject({
        state: 'done',
        total: rows.length,
        found: httpSummary.found,
        empty: httpSummary.empty,
        failed: httpSummary.failed,
      });
      expect(httpSummary.found).toBeGreaterThan(0);
      expect(httpSummary.empty).toBeGreaterThan(0);
      const lines = await comparable(overMcp.output);
      expect(lines).toHaveLength(rows.length);
      expect(lines).toEqual(await comparable(overHttp.output));
      // Each sent row: one tool call and at least one check_status, and no HTTP submit.
      const sent = httpSummary.found + httpSummary.empty;
      expect((stats()['POST /mcp'] ?? 0) - mcpBefore).toBeGreaterThanOrEqual(2 * sent);
      expect(stats()['POST /person/enrichment'] ?? 0).toBe(httpSubmits);

      // A compact batch's rows (activities of the batch) go over MCP alike.
      const mcpBeforeCompact = stats()['POST /mcp'] ?? 0;
      const compact = await startCsvBatch(client, taskQueue, 'over-mcp-compact', input, {
        ...options,
        transport: 'mcp',
        compact: true,
      });
      expect(await compact.handle.result()).toMatchObject({
        state: 'done',
        found: httpSummary.found,
        empty: httpSummary.empty,
        failed: httpSummary.failed,
      });
      expect(await comparable(compact.output)).toEqual(await comparable(overHttp.output));
      expect((stats()['POST /mcp'] ?? 0) - mcpBeforeCompact).toBeGreaterThanOrEqual(2 * sent);
      expect(stats()['POST /person/enrichment'] ?? 0).toBe(httpSubmits);
    });
  });
});

// Child process of bench/emulator.ts: starts the emulator (limits, latency and faults off) or a
// bare node:http baseline, finishes one job, and prints one JSON line saying what to load.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEmulator } from '../src/emulator/index.js';

const mode = process.argv[2] ?? 'emulator';

if (mode === 'baseline') {
  const body = JSON.stringify({
    success: true,
    data: { status: 'completed', completed: true },
    timestamp: '2026-01-01T00:00:00',
  });
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}/`, headers: {} }) + '\n');
  });
} else {
  const em = await startEmulator({
    port: 0,
    limits: { enabled: false },
    latency: { queuedMs: 0, processingMs: 0 },
  });
  const headers = { 'x-api-key': em.devKey.key, 'x-api-secret': em.devKey.secret };
  const ack = (await (
    await fetch(`${em.url}/person/enrichment`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'someone@unknown.pcds.dev' }),
    })
  ).json()) as { data: { request_id: string } };
  const url = `${em.url}/person/enrichment?request_id=${ack.data.request_id}`;
  const first = await fetch(url, { headers });
  const poll = (await first.json()) as { data: { completed: boolean } };
  if (first.status !== 200 || !poll.data.completed)
    throw new Error('the benchmark job did not finish');
  process.stdout.write(JSON.stringify({ url, headers }) + '\n');
}

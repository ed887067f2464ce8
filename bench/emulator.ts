// Throughput of the emulator on its simplest request (the poll of a finished job), with limits,
// latency and faults off, against a bare node:http server answering fixed JSON in the same run.
// The server runs in a child process; autocannon loads it from this one.
//   npx tsx bench/emulator.ts [seconds] [connections]
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);
const serverScript = fileURLToPath(new URL('./emulator-server.ts', import.meta.url));

async function startChild(
  mode: string,
): Promise<{ child: ChildProcess; url: string; headers: Record<string, string> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', serverScript, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
  return { child, ...(JSON.parse(line) as { url: string; headers: Record<string, string> }) };
}

async function load(name: string, mode: string) {
  const { child, url, headers } = await startChild(mode);
  try {
    // A short warm-up so the JIT has settled before measuring.
    await autocannon({ url, headers, connections, duration: 2 });
    const r = await autocannon({ url, headers, connections, duration: seconds });
    const non2xx = r.non2xx + r.errors + r.timeouts;
    return {
      name,
      reqPerSec: Math.round(r.requests.average),
      p50: r.latency.p50,
      p99: r.latency.p99,
      total: r.requests.total,
      non2xx,
    };
  } finally {
    child.kill('SIGTERM');
  }
}

const emulator = await load('emulator GET /person/enrichment (finished job)', 'emulator');
const baseline = await load('baseline node:http fixed JSON', 'baseline');
for (const r of [emulator, baseline]) {
  console.log(
    `${r.name.padEnd(48)} ${String(r.reqPerSec).padStart(7)} req/s   p50 ${r.p50} ms   p99 ${r.p99} ms   (${r.total} requests, ${r.non2xx} errors or non-2xx)`,
  );
}
console.log(
  `emulator / baseline: ${(emulator.reqPerSec / baseline.reqPerSec).toFixed(2)}  (${connections} connections, ${seconds} s each)`,
);
console.log(
  emulator.reqPerSec >= 5000 ? 'goal met: at least 5,000 req/s' : 'goal missed: below 5,000 req/s',
);

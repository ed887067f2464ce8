// PCDS_WORKER_HEAP_GROWTH (worker/heap.ts): a process whose live objects keep changing peaks near
// what it holds once the bound is set, where V8's own factor lets its heap reach several times
// that; 0 and a node option on the command line leave V8's own factor. Each case runs in a
// process of its own (the bound is process-wide), the same allocations in each.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../../src/temporal/cli-binary.js';

const script = join(mkdtempSync(join(tmpdir(), 'pcds-heap-')), 'churn.mts');
writeFileSync(
  script,
  `import { boundHeapGrowth } from ${JSON.stringify(join(projectRoot(), 'src/worker/heap.ts'))};
const set = boundHeapGrowth(Number(process.argv[2]));
// About 64 MB of live arrays, each replaced in turn by a new one: old objects become garbage.
const live = [];
for (let i = 0; i < 1024; i++) live.push(new Array(8192).fill(i));
let peak = 0;
for (let i = 0; i < 40000; i++) {
  live[i % 1024] = new Array(8192).fill(i);
  if (i % 64 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
}
process.stdout.write(JSON.stringify({ set, peakMb: peak / 1048576, live: live.length }));
`,
);

const run = promisify(execFile);

interface Churned {
  set: boolean;
  peakMb: number;
}

async function churn(percent: number, nodeArgs: string[] = []): Promise<Churned> {
  const { stdout } = await run(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', script, String(percent)],
    { cwd: projectRoot(), encoding: 'utf8' },
  );
  return JSON.parse(stdout) as Churned;
}

describe('PCDS_WORKER_HEAP_GROWTH', () => {
  // The three processes at once: each takes a few seconds (tsx, then the allocations).
  let own: Churned, bounded: Churned, given: Churned;
  beforeAll(async () => {
    [own, bounded, given] = await Promise.all([
      churn(0),
      churn(50),
      churn(50, ['--heap-growing-percent=300']),
    ]);
  }, 60_000);

  it("keeps the heap's peak near its live objects, where V8's own factor lets it grow", () => {
    expect(own.set).toBe(false);
    expect(bounded.set).toBe(true);
    // 64 MB live: bounded at 1.5 times it (and the young generation), against about 300 MB.
    expect(bounded.peakMb).toBeLessThan(0.6 * own.peakMb);
    expect(bounded.peakMb).toBeGreaterThan(64);
  });

  it('leaves the factor to a node option given on the command line', () => {
    expect(given.set).toBe(false);
    expect(given.peakMb).toBeGreaterThan(1.5 * bounded.peakMb);
  });
});

// The memory of a process a benchmark measures, loaded into it with `node --import
// ./bench/memory-report.mjs ...` (plain JavaScript: the process runs as it would in production,
// with no TypeScript loader) or imported first. With PCDS_BENCH_MEMORY_FILE=<file> it writes the
// process's RSS and main V8 heap, now and at their peak, to that file every half second; with
// PCDS_BENCH_HEAP_SNAPSHOT=<dir> it writes heap snapshots there on SIGUSR2: the main thread's and
// each worker thread's (a Temporal worker runs its workflows in a thread of its own, whose heap
// the main thread's figures leave out).
import { createRequire } from 'node:module';
import { createWriteStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { writeHeapSnapshot } from 'node:v8';

/** @typedef {{ rss: number, heapUsed: number }} MemoryFigures */
/**
 * `liveHeap`: the most heap a full garbage collection left behind (what the process holds on to,
 * garbage not counted), absent before the first one.
 * @typedef {{ now: MemoryFigures, peak: MemoryFigures, liveHeap?: number }} MemoryReport
 */

/** The peaks of a process's memory, sampled every `everyMs`. */
export class MemorySampler {
  /** @type {MemoryFigures} */
  peak = { rss: 0, heapUsed: 0 };

  /** @param {() => MemoryFigures} read @param {number} everyMs */
  constructor(read = () => process.memoryUsage(), everyMs = 100) {
    this.read = read;
    this.timer = setInterval(() => this.sample(), everyMs);
    this.timer.unref();
  }

  /** One sample, taken into the peaks. @returns {MemoryFigures} */
  sample() {
    const { rss, heapUsed } = this.read();
    this.peak = {
      rss: Math.max(this.peak.rss, rss),
      heapUsed: Math.max(this.peak.heapUsed, heapUsed),
    };
    return { rss, heapUsed };
  }

  /** The last sample; no more are taken. @returns {MemoryFigures} */
  stop() {
    clearInterval(this.timer);
    return this.sample();
  }
}

/** @type {import('node:worker_threads').Worker[]} */
const threads = [];

/**
 * Keeps every worker thread started from now on. The SDK starts its workflow threads with the
 * CommonJS module's Worker, looked up at each start: a subclass put there sees them.
 */
function trackWorkerThreads() {
  /** @type {typeof import('node:worker_threads')} */
  const module = createRequire(import.meta.url)('node:worker_threads');
  const Base = module.Worker;
  module.Worker = class TrackedWorker extends Base {
    /** @param {ConstructorParameters<typeof Base>} args */
    constructor(...args) {
      super(...args);
      threads.push(this);
    }
  };
}

/**
 * Heap snapshots of the main thread and of each worker thread still running, into `dir`.
 * @param {string} dir @param {string} tag
 */
export async function writeHeapSnapshots(dir, tag) {
  writeHeapSnapshot(join(dir, `${tag}-main.heapsnapshot`));
  await Promise.all(
    threads.map(async (t, i) => {
      const snapshot = await t.getHeapSnapshot().catch(() => undefined);
      if (snapshot)
        await pipeline(snapshot, createWriteStream(join(dir, `${tag}-thread${i}.heapsnapshot`)));
    }),
  );
}

/**
 * Calls `seen` with the heap in use just after each full (mark-compact) garbage collection of
 * this thread: the live data then, which a peak of heapUsed (garbage included) does not show.
 * @param {(heapUsed: number) => void} seen
 */
export function afterFullCollections(seen) {
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      if (
        /** @type {{ kind?: number }} */ (entry.detail)?.kind ===
        constants.NODE_PERFORMANCE_GC_MAJOR
      )
        seen(process.memoryUsage().heapUsed);
  });
  observer.observe({ entryTypes: ['gc'] });
}

const file = process.env.PCDS_BENCH_MEMORY_FILE;
if (file) {
  const sampler = new MemorySampler();
  /** @type {number | undefined} */
  let liveHeap;
  afterFullCollections((heap) => (liveHeap = Math.max(liveHeap ?? 0, heap)));
  const write = () => {
    /** @type {MemoryReport} */
    const report = {
      now: sampler.sample(),
      peak: sampler.peak,
      ...(liveHeap !== undefined ? { liveHeap } : {}),
    };
    writeFileSync(file, JSON.stringify(report));
  };
  setInterval(write, 500).unref();
  process.once('exit', write);
}

const snapshotDir = process.env.PCDS_BENCH_HEAP_SNAPSHOT;
if (snapshotDir) {
  trackWorkerThreads();
  let taken = 0;
  process.on('SIGUSR2', () => {
    taken += 1;
    void writeHeapSnapshots(snapshotDir, `${process.pid}-${taken}`);
  });
}

// How far a worker's heap may grow past what it holds before V8 collects it again. V8 lets a busy
// process's heap grow up to four times what its last full collection left: a worker holding
// 85 MB of live objects peaked near 300 MB of heap between collections, and its RSS with it, the
// more so the longer a batch ran. A bound on that factor keeps the peak near the live heap.
import { setFlagsFromString } from 'node:v8';

/** The node option that sets the factor; one given on node's command line is kept. */
const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/**
 * Bounds the heap's growth between full collections to `percent` of what the last one left
 * (PCDS_WORKER_HEAP_GROWTH). 0 keeps V8's own; so does the node option given on the command line
 * (`node --heap-growing-percent=N`), which wins. Process-wide, and from now on: every heap in the
 * process (the workflow threads' included) follows it. Returns whether it set the bound.
 */
export function boundHeapGrowth(
  percent: number,
  nodeArgs: readonly string[] = process.execArgv,
): boolean {
  if (percent <= 0 || nodeArgs.some((a) => FLAG.test(a))) return false;
  setFlagsFromString(`--heap-growing-percent=${Math.floor(percent)}`);
  return true;
}

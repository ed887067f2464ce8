// The project's workflows after a change deployed mid-run by bench/soak.ts: a row's call and the
// batch each take one new command, behind patched() as docs/upgrading.md asks.
// Workflows started by the previous code replay on this one and finish under it.
import { patched, sleep } from '@temporalio/workflow';
import { batchWorkflow as currentBatch } from '../src/workflows/batch.js';
import {
  endpointCall as currentCall,
  type EndpointCallInput,
} from '../src/workflows/endpoint-call.js';
import type { BatchInput } from '../src/batch/types.js';

export * from '../src/workflows/person-search.js';
export * from '../src/workflows/throttle.js';
export * from '../src/workflows/search-export.js';

export async function endpointCall(input: EndpointCallInput) {
  if (patched('soak-deploy-call')) await sleep(1);
  return currentCall(input);
}

export async function batchWorkflow(input: BatchInput) {
  if (patched('soak-deploy-batch')) await sleep(1);
  return currentBatch(input);
}

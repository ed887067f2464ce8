// The priority and fairness the work carries to Temporal, from its requester.
import { describe, expect, it } from 'vitest';
import {
  backgroundRequester,
  batchRequester,
  interactiveRequester,
} from '../../../src/contract/tenant.js';
import {
  fairnessKeyOf,
  MAX_FAIRNESS_KEY_BYTES,
  taskPriorityOf,
} from '../../../src/temporal/task-priority.js';

describe('task priority', () => {
  it('puts interactive calls first, then batches, then background work', () => {
    const interactive = taskPriorityOf(interactiveRequester('alice')).priorityKey!;
    const batch = taskPriorityOf(batchRequester('alice.f2', 'alice', 2)).priorityKey!;
    const background = taskPriorityOf(backgroundRequester()).priorityKey!;
    expect(interactive).toBeLessThan(batch);
    expect(batch).toBeLessThan(background);
  });

  it("gives a batch's rows one fairness key weighted by the batch, a tenant's calls another", () => {
    expect(taskPriorityOf(batchRequester('alice.f2', 'alice', 2))).toEqual({
      priorityKey: 3,
      fairnessKey: 'batch:alice.f2',
      fairnessWeight: 2,
    });
    expect(taskPriorityOf(interactiveRequester('bob'))).toEqual({
      priorityKey: 1,
      fairnessKey: 'tenant:bob',
    });
  });

  it('keeps every fairness key within 64 bytes, two long keys apart', () => {
    const a = `batch:${'t'.repeat(64)}.${'a'.repeat(64)}`;
    const b = `batch:${'t'.repeat(64)}.${'b'.repeat(64)}`;
    for (const k of [a, b])
      expect(Buffer.byteLength(fairnessKeyOf(k))).toBeLessThanOrEqual(MAX_FAIRNESS_KEY_BYTES);
    expect(fairnessKeyOf(a)).not.toBe(fairnessKeyOf(b));
    expect(fairnessKeyOf('batch:f2')).toBe('batch:f2');
  });
});

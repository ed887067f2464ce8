// Workflow ids of every kind: a tenant's ids are its own, and no batch id can name a row's call.
import { describe, expect, it } from 'vitest';
import {
  batchIdOfWorkflowId,
  batchWorkflowId,
  CURRENT_ROW_ID_SCHEME,
  exportIdOfWorkflowId,
  isScopedId,
  localIdOf,
  resolveScopedId,
  rowOfWorkflowId,
  rowWorkflowId,
  scopedId,
  searchExportWorkflowId,
  splitScopedId,
} from '../../../src/contract/workflow-ids.js';

describe('ids a tenant names', () => {
  it("are the operator's as given and another tenant's after its id and a dot", () => {
    expect(scopedId('default', 'f2')).toBe('f2');
    expect(scopedId('alice', 'f2')).toBe('alice.f2');
    expect(scopedId('team.eu', 'f2')).toBe('team.eu.f2');
    expect(splitScopedId('team.eu.f2')).toEqual({ tenant: 'team.eu', localId: 'f2' });
    expect(splitScopedId('f2')).toEqual({ tenant: 'default', localId: 'f2' });
    // One spelling each: `default.f2` would be a second name for the operator's `f2`.
    for (const id of ['default.f2', 'alice.', '.f2', '..f2', 'alice.f:2', '', 'x'.repeat(65)])
      expect(isScopedId(id), id).toBe(false);
  });

  it("resolve to the tenant's own work only; the operator names any tenant's", () => {
    expect(resolveScopedId('alice', 'f2')).toBe('alice.f2');
    expect(resolveScopedId('alice', 'alice.f2')).toBe('alice.f2');
    expect(resolveScopedId('bob', 'alice.f2')).toBeUndefined();
    expect(resolveScopedId('alice', 'alice.x.f2')).toBeUndefined();
    expect(resolveScopedId('default', 'alice.f2')).toBe('alice.f2');
    expect(resolveScopedId('default', 'f2')).toBe('f2');
    expect(resolveScopedId('alice', 'not an id')).toBeUndefined();
    expect(localIdOf('alice', 'alice.f2')).toBe('f2');
    expect(localIdOf('default', 'alice.f2')).toBe('alice.f2');
  });

  it('of two tenants never meet, whatever they choose', () => {
    const ids = new Set<string>();
    for (const tenant of ['default', 'alice', 'bob', 'alice.f2', 'a'])
      for (const local of ['f2', 'alice-f2', 'f2-row-3', 'a'])
        ids.add(batchWorkflowId(scopedId(tenant, local)));
    expect(ids.size).toBe(20);
  });
});

describe('row ids', () => {
  it('of the current scheme hold a `:` that no batch id can: no batch workflow is ever a row', () => {
    expect(rowWorkflowId('alice.f2', 3, CURRENT_ROW_ID_SCHEME)).toBe('batch-alice.f2:row-3');
    // The old scheme's collision: a batch named `<id>-row-3` is row 3 of batch `<id>`.
    expect(batchWorkflowId('alice-f2-row-3')).toBe(rowWorkflowId('alice-f2', 3));
    for (const batch of ['alice-f2', 'f2', 'bob.alice-f2-row-3'])
      for (const row of [1, 3, 1000]) {
        const id = rowWorkflowId(batch, row, 'v2');
        expect(batchIdOfWorkflowId(id), id).toBeUndefined();
        expect(rowOfWorkflowId(id)).toEqual({ batchId: batch, row });
      }
  });

  it('of either scheme read back, and nothing else does', () => {
    expect(rowOfWorkflowId(rowWorkflowId('b-1', 12))).toEqual({ batchId: 'b-1', row: 12 });
    // A batch id that holds "-row-" itself is read whole: the row is the last part.
    expect(rowOfWorkflowId(rowWorkflowId('x-row-3', 5))).toEqual({ batchId: 'x-row-3', row: 5 });
    for (const id of [
      'batch-b-1',
      'call-abc',
      'batch-b-1-row-0',
      'batch-b-1-row-x',
      'batch--row-1',
      'batch-b-1:row-0',
      'batch-b-1:row-x',
      'batch-default.b:row-1',
      'batch-a:b:row-1',
    ])
      expect(rowOfWorkflowId(id), id).toBeUndefined();
  });

  it('batch and export workflow ids read back their scoped ids', () => {
    expect(batchIdOfWorkflowId(batchWorkflowId('alice.f2'))).toBe('alice.f2');
    expect(exportIdOfWorkflowId(searchExportWorkflowId('alice.e1'))).toBe('alice.e1');
    expect(exportIdOfWorkflowId('search-person_search-k123')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { classifyStatus } from '../../../src/contract/status.js';

const GENERAL_RUNNING = [
  'pending',
  'queued',
  'processing',
  'finding',
  'fetching',
  'analyzing',
  'enriching',
  'gathering',
  'aggregating',
  'searching',
  'discovering',
  'running',
  'started',
  'in_progress',
];
const GENERAL_SUCCEEDED = ['completed', 'complete', 'success', 'succeeded'];
const GENERAL_FAILED = [
  'failed',
  'error',
  'not_found',
  'cancelled',
  'canceled',
  'timeout',
  'timed_out',
];

describe('general contract', () => {
  it.each(GENERAL_RUNNING)('%s is in progress', (s) => {
    expect(classifyStatus(s, 'general')).toEqual({ kind: 'running', status: s });
  });
  it.each(GENERAL_SUCCEEDED)('%s is terminal success', (s) => {
    expect(classifyStatus(s, 'general')).toEqual({ kind: 'succeeded', status: s });
  });
  it.each(GENERAL_FAILED)('%s is terminal failure', (s) => {
    expect(classifyStatus(s, 'general')).toEqual({ kind: 'failed', status: s });
  });
  it.each(['exhausted', 'stale', 'done', 'waiting', ''])('undocumented "%s" is unknown', (s) => {
    expect(classifyStatus(s, 'general')).toEqual({ kind: 'unknown', status: s });
  });
  it('a missing or non-string status is unknown', () => {
    expect(classifyStatus(undefined, 'general')).toEqual({ kind: 'unknown', status: '' });
    expect(classifyStatus(42, 'general')).toEqual({ kind: 'unknown', status: '' });
  });
  it('reads case and surrounding blanks leniently', () => {
    expect(classifyStatus(' Completed ', 'general')).toEqual({
      kind: 'succeeded',
      status: 'completed',
    });
  });
});

describe('person search contract', () => {
  it.each(['processing', 'pending', 'enriching'])(
    '%s (incl. legacy values) is in progress',
    (s) => {
      expect(classifyStatus(s, 'person_search')).toEqual({ kind: 'running', status: s });
    },
  );
  it.each(['completed', 'exhausted', 'stale'])('%s is terminal', (s) => {
    expect(classifyStatus(s, 'person_search', true)).toEqual({ kind: 'succeeded', status: s });
    expect(classifyStatus(s, 'person_search')).toEqual({ kind: 'succeeded', status: s });
  });
  it('overrides the general lists: general-only words are unknown', () => {
    for (const s of ['queued', 'finding', 'running', 'complete', 'success']) {
      expect(classifyStatus(s, 'person_search')).toEqual({ kind: 'unknown', status: s });
    }
  });
  it('a failure status still ends the search', () => {
    expect(classifyStatus('failed', 'person_search')).toEqual({ kind: 'failed', status: 'failed' });
  });
  it('completed=false keeps polling even when the status reads completed (HTTP 200 proves nothing)', () => {
    expect(classifyStatus('completed', 'person_search', false)).toEqual({
      kind: 'running',
      status: 'completed',
    });
  });
  it('completed=true ends the job even when the status is an in-progress word', () => {
    expect(classifyStatus('processing', 'person_search', true)).toEqual({
      kind: 'succeeded',
      status: 'processing',
    });
  });
});

describe('completed flag (any contract)', () => {
  it('decides over the status table', () => {
    expect(classifyStatus('completed', 'general', false)).toEqual({
      kind: 'running',
      status: 'completed',
    });
    expect(classifyStatus('failed', 'general', false)).toEqual({
      kind: 'running',
      status: 'failed',
    });
    expect(classifyStatus('running', 'general', true)).toEqual({
      kind: 'succeeded',
      status: 'running',
    });
  });
  it('true with a failure status is a failure', () => {
    expect(classifyStatus('failed', 'general', true)).toEqual({ kind: 'failed', status: 'failed' });
  });
  it('true without a status is success', () => {
    expect(classifyStatus(undefined, 'general', true)).toEqual({ kind: 'succeeded', status: '' });
  });
  it('true with an undocumented status stays unknown', () => {
    expect(classifyStatus('mystery', 'general', true)).toEqual({
      kind: 'unknown',
      status: 'mystery',
    });
  });
});

describe('MCP contract', () => {
  it('pending is in progress', () => {
    expect(classifyStatus('pending', 'mcp')).toEqual({ kind: 'running', status: 'pending' });
  });
  it('complete, and legacy completed of GET /mcp/status, are success', () => {
    expect(classifyStatus('complete', 'mcp')).toEqual({ kind: 'succeeded', status: 'complete' });
    expect(classifyStatus('completed', 'mcp')).toEqual({ kind: 'succeeded', status: 'completed' });
  });
  it('error is failure', () => {
    expect(classifyStatus('error', 'mcp')).toEqual({ kind: 'failed', status: 'error' });
  });
  it.each(['processing', 'queued', 'failed', 'success'])(
    'general word %s is unknown on MCP',
    (s) => {
      expect(classifyStatus(s, 'mcp')).toEqual({ kind: 'unknown', status: s });
    },
  );
});

// What a call's workflow shows operators: PcdsState and PcdsOutcome in its search attributes and
// its current details. Each change of phase is one upsert (one history event) carrying whatever
// else changed with it, and a long wait of one of its activities for a permit shows `throttled`
// and why (permit-waits.ts) until a request goes out without one or the phase moves on. Workflow
// code: the upserts are commands, in the order the call recorded them.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { CallState } from '../calls/types.js';
import { PcdsOutcome, PcdsState } from '../temporal/search-attributes.js';
import { callFailure, failureCode, type CallStateAttr } from './call-steps.js';
import { showPermitWaits, type PermitWaitView } from './permit-waits.js';

const NONE = { get: () => undefined };

export class CallView {
  /** Attributes that go with the next change of phase. */
  private pending: SearchAttributeUpdatePair[];
  /** What PcdsState shows now. */
  private shown: CallStateAttr = 'submitting';
  private readonly waits: PermitWaitView;
  /** What the start showed, until the first change of phase (when the start showed it). */
  private atStart: { get(key: never): unknown } = NONE;

  constructor(
    private readonly label: string,
    private readonly state: CallState,
    /** The call's own attributes (endpoint, key, batch, row), shown with its first phase. */
    attrs: SearchAttributeUpdatePair[],
    /** Its start showed them already (CallInput.startedShowing). */
    startedShowing = false,
  ) {
    if (startedShowing) this.atStart = workflowInfo().typedSearchAttributes;
    this.pending = [
      ...attrs,
      { key: PcdsOutcome, value: 'running' },
    ] as SearchAttributeUpdatePair[];
    this.waits = showPermitWaits({
      label,
      ended: () => state.phase === 'done',
      shown: () => this.shown === 'throttled',
      enter: (details) => this.enter(state.phase, 'throttled', undefined, details),
    });
  }

  /** Enters `phase`, shown as `attr` (throttled, waiting_for_key...), with its outcome once known. */
  enter(
    phase: CallState['phase'],
    attr: CallStateAttr = phase,
    outcome?: 'found' | 'empty' | 'failed',
    details?: string,
  ): void {
    this.state.phase = phase;
    this.shown = attr;
    if (attr !== 'throttled') this.waits.reset();
    const pairs = [
      ...this.pending,
      { key: PcdsState, value: attr },
      ...(outcome ? [{ key: PcdsOutcome, value: outcome }] : []),
    ] as SearchAttributeUpdatePair[];
    // A call started showing what its first phase would upsert has no event for it; anything
    // else shown differently upserts the whole list, as a call started before did.
    if (!pairs.every((p) => this.atStart.get(p.key as never) === p.value))
      upsertSearchAttributes(pairs);
    this.atStart = NONE;
    this.pending = [];
    const request = this.state.requestId ? ` (request ${this.state.requestId})` : '';
    setCurrentDetails(`${this.label}: ${details ?? attr}${request}`);
  }

  /** An attribute learned now (the key a default resolved to), shown with the next change. */
  later(pair: SearchAttributeUpdatePair): void {
    this.pending.push(pair);
  }

  /**
   * A request went out within the reporting threshold of being asked for: a call shown
   * `throttled` goes back to its phase (a row held back poll after poll costs its history one
   * change, not one per poll).
   */
  sentWithoutWait(askedAt: number, sentAt: number | undefined): void {
    if (this.shown !== 'throttled' || sentAt === undefined) return;
    if (sentAt - askedAt < (this.waits.shownWait?.reportAfterMs ?? 0)) this.enter(this.state.phase);
  }

  /** Ends the call with the failure's code (a timeout of the step gets `timeoutCode`). */
  fail(err: unknown, timeoutCode: string): never {
    const f = failureCode(err, timeoutCode);
    this.enter('done', 'failed', 'failed', `failed: ${f.code}`);
    throw callFailure(f.code, f.message, f.details);
  }
}

// A call's long waits for permits, as operators see them: PcdsState `throttled`, and why in the
// details (the Web UI's "current details"). Workflow code.
import { setCurrentDetails, setHandler } from '@temporalio/workflow';
import type { PermitWait } from '../throttle/permits.js';
import { permitWaitUpdate } from '../calls/signals.js';
import { describePermitWait } from '../throttle/status-text.js';

export interface PermitWaitView {
  /** The wait shown now, if the workflow shows `throttled` for one. */
  readonly shownWait: PermitWait | undefined;
  /** The workflow left `throttled` (its phase moved on): a later wait is shown afresh. */
  reset(): void;
}

/**
 * Shows the long permit waits of a workflow's activities (the permitWait update): `enter` puts
 * PcdsState to `throttled` with the details given, unless `shown()` says it is already; then only
 * the details change. A wait reported again for the reason already shown is refused by the
 * validator, which leaves no history event, so a workflow held back request after request costs
 * its history one change per stretch of waiting. Leaving `throttled` is the workflow's own rule.
 */
export function showPermitWaits(o: {
  label: string;
  ended: () => boolean;
  shown: () => boolean;
  enter: (details: string) => void;
}): PermitWaitView {
  let wait: PermitWait | undefined;
  setHandler(
    permitWaitUpdate,
    (w) => {
      const details = `throttled: ${describePermitWait(w)}`;
      if (o.shown()) setCurrentDetails(`${o.label}: ${details}`);
      else o.enter(details);
      wait = w;
    },
    {
      validator: (w) => {
        if (o.ended()) throw new Error('the workflow has ended');
        if (wait?.reason === w.reason) throw new Error('this wait is shown already');
      },
    },
  );
  return {
    get shownWait() {
      return wait;
    },
    reset() {
      wait = undefined;
    },
  };
}

// A call waiting for its retry when its connection closes ends with an error of its own, instead
// of a throw from the retry's timer that would kill the process.
import { Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { clientInterceptors } from '../../../src/temporal/closed-channel.js';

describe('a client connection closed while a call waits for its retry', () => {
  it('ends the call as cancelled, and nothing throws after the close', async () => {
    // Nothing listens on port 1: the first attempt fails UNAVAILABLE and a retry is scheduled.
    const connection = Connection.lazy({
      address: '127.0.0.1:1',
      interceptors: clientInterceptors(),
    });
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const call = connection.workflowService.getSystemInfo({});
      const settled = call.then(
        () => 'answered',
        (err: unknown) => err,
      );
      // Let the first attempt fail and its retry's timer start (100 ms ± jitter).
      await new Promise((r) => setTimeout(r, 60));
      await connection.close();
      const outcome = await settled;
      expect(outcome).toBeInstanceOf(Error);
      expect(String((outcome as Error).message)).toMatch(/CANCELLED|closed/i);
      // Any timer left behind would have fired by now.
      await new Promise((r) => setTimeout(r, 500));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});

// A client connection's calls end cleanly when the connection closes while one of them waits to be
// retried. The SDK's retry interceptor schedules each retry on a timer that `Connection.close()`
// does not clear; when such a timer fires after the close, gRPC throws "Channel has been shut
// down" inside the timer, outside any caller's await, and the process dies of an uncaught
// exception (seen when a command closes its connection as Temporal stops). Placed after the retry
// interceptor, this one turns that throw into the call's own status, CANCELLED, which the retry
// interceptor does not retry and hands to whoever made the call.
import { InterceptingCall, status as grpcStatus, Metadata, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

const CLOSED = 'Channel has been shut down';

/** What an InterceptingCall wraps (gRPC does not export the interface by name). */
type NextCall = ConstructorParameters<typeof InterceptingCall>[0];

/** A call that never reaches the network: it ends at once with CANCELLED. */
function closedCall(): NextCall {
  return {
    start(_metadata, listener) {
      setImmediate(() =>
        listener?.onReceiveStatus?.({
          code: grpcStatus.CANCELLED,
          details: 'the Temporal connection was closed before this call could be retried',
          metadata: new Metadata(),
        }),
      );
    },
    sendMessageWithContext(context) {
      context.callback?.();
    },
    sendMessage() {},
    startRead() {},
    halfClose() {},
    cancelWithStatus() {},
    getPeer: () => '',
    getAuthContext: () => null,
  };
}

/** Ends a call made on a closed channel with its status instead of a throw. */
export const closedChannelGuard: Interceptor = (options, nextCall) => {
  try {
    return new InterceptingCall(nextCall(options));
  } catch (err) {
    if (!(err instanceof Error) || err.message !== CLOSED) throw err;
    return new InterceptingCall(closedCall());
  }
};

/** The interceptors of every client connection: the SDK's retries, then the guard. */
export const clientInterceptors = (): Interceptor[] => [
  makeGrpcRetryInterceptor(defaultGrpcRetryOptions()),
  closedChannelGuard,
];

// A Temporal client call cancelled by a signal that outlives it. The client adds an 'abort'
// listener to the signal it runs under for every gRPC call and never removes it: a signal given
// to call after call (retries, a long poll) gathers them (MaxListenersExceededWarning, and the
// memory they hold). Each call here runs under a signal of its own that follows the caller's for
// as long as the call lasts.

interface AbortableClient {
  withAbortSignal<R>(signal: AbortSignal, fn: () => Promise<R>): Promise<R>;
}

export async function withCallSignal<T>(
  client: AbortableClient,
  signal: AbortSignal,
  fn: () => Promise<T>,
): Promise<T> {
  // The client starts a call under a signal already aborted: none is started here.
  if (signal.aborted)
    throw new Error('call cancelled before it started: its signal was aborted', {
      cause: signal.reason,
    });
  const own = new AbortController();
  const follow = () => own.abort(signal.reason);
  signal.addEventListener('abort', follow, { once: true });
  try {
    return await client.withAbortSignal(own.signal, fn);
  } finally {
    signal.removeEventListener('abort', follow);
  }
}

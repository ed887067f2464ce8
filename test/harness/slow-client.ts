// Clients that hold a listener's connections: one that sends a request a byte a second (its
// headers, or its body after complete headers), and a crowd of idle connections. What a listener
// does with them (how soon it closes the slow one, whether it takes one connection too many) is
// measured from the client's side, over raw TCP.
import { connect, type Socket } from 'node:net';

export interface Trickle {
  /** Milliseconds from the connection to its close by the server. */
  closedAfterMs: number;
  /** Bytes the client got to send before that. */
  sent: number;
  /** What the server said, if anything (a 408, say). */
  answer: string;
}

/**
 * Connects to `url`'s host and port and sends `head` then `tail` a byte a second (headers
 * trickled: `head` empty; body trickled: `head` the whole headers), until the server closes the
 * connection or `giveUpMs` passes (then closedAfterMs is Infinity).
 */
export function trickle(
  url: string,
  opts: { head?: string; tail: string; giveUpMs: number },
): Promise<Trickle> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    let sent = 0;
    let answer = '';
    let timer: NodeJS.Timeout | undefined;
    const socket: Socket = connect(Number(port), hostname.replace(/^\[|\]$/g, ''));
    const finish = (closedAfterMs: number) => {
      clearInterval(timer);
      socket.destroy();
      resolve({ closedAfterMs, sent, answer });
    };
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(Date.now() - started));
    socket.once('connect', () => {
      if (opts.head) socket.write(opts.head);
      timer = setInterval(() => {
        if (sent < opts.tail.length && !socket.destroyed) socket.write(opts.tail[sent++]);
      }, 1_000);
    });
    setTimeout(() => finish(Infinity), opts.giveUpMs).unref();
  });
}

/** A request's headers, for `trickle`. */
export const requestHead = (
  method: string,
  url: string,
  headers: Record<string, string> = {},
): string => {
  const u = new URL(url);
  const lines = [`${method} ${u.pathname} HTTP/1.1`, `Host: ${u.host}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return lines.join('\r\n') + '\r\n\r\n';
};

/**
 * Opens `count` connections to `url` and keeps them idle; resolves once all are connected, with
 * a way to see which the server has closed since, and to close them all.
 */
export async function openConnections(
  url: string,
  count: number,
): Promise<{ closed(): number; closeAll(): void }> {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  const gone = new Set<Socket>();
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve, reject) => {
          const s = connect(Number(port), hostname.replace(/^\[|\]$/g, ''), () => resolve());
          s.on('error', () => undefined);
          s.on('close', () => gone.add(s));
          s.once('error', reject);
          sockets.push(s);
        }),
    ),
  );
  return {
    closed: () => gone.size,
    closeAll: () => sockets.forEach((s) => s.destroy()),
  };
}

/**
 * Whether one connection more, opened now, is closed by the server within `withinMs` (with no
 * answer): what a listener at its connection limit does.
 */
export function oneMoreIsRefused(url: string, withinMs: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname.replace(/^\[|\]$/g, ''));
    const timer = setTimeout(() => {
      s.destroy();
      resolve(false);
    }, withinMs);
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

// The worker's /metrics listener (PCDS_METRICS_HOST:PCDS_METRICS_PORT). The Temporal SDK's core
// renders the Prometheus text on a loopback port of its own, whose HTTP server takes no bounds;
// this listener keeps the project's (header and request deadlines, a connection limit) and
// answers GET /metrics with what the core renders. Metrics hold counts, codes and key ids only.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createBoundedServer,
  listenerLimits,
  type ListenerLimits,
} from '../http/listener-limits.js';

export interface MetricsEndpointOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Where the core serves the text: http://127.0.0.1:<port>/metrics. */
  upstream: string;
  limits?: Partial<ListenerLimits>;
}

export interface MetricsEndpoint {
  /** The scrape URL. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** How long the core has to render the text before the scrape is answered 502. */
const UPSTREAM_TIMEOUT_MS = 10_000;

export async function startMetricsEndpoint(opts: MetricsEndpointOptions): Promise<MetricsEndpoint> {
  const server: Server = createBoundedServer(listenerLimits(opts.limits), (req, res) => {
    if ((req.url ?? '').split('?')[0] !== '/metrics')
      return void res.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    fetch(opts.upstream, { signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS) })
      .then(async (up) => {
        const body = await up.text();
        res.writeHead(up.status, {
          'content-type': up.headers.get('content-type') ?? 'text/plain; version=0.0.4',
        });
        res.end(req.method === 'HEAD' ? undefined : body);
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('the metrics could not be read\n');
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // The process ends when its work does: a scrape endpoint keeps nothing running.
  server.unref();
  const { port } = server.address() as AddressInfo;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${host}:${port}/metrics`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

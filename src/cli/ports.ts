// The ports `pcds dev` and the demo listen on, checked before anything starts: a taken port is
// named with the flag that moves it instead of surfacing as a bare EADDRINUSE.
import { createServer } from 'node:net';
import { CliError } from './output.js';

/** A port the stack would listen on is taken; the message names the flag that moves it. */
export class PortInUseError extends CliError {
  override readonly code = 'port_in_use';
}

/** What listens on each port of the stack, and the flag (of `pcds dev` and the demo) that moves it. */
export const STACK_PORTS = {
  temporal: { what: 'Temporal frontend (gRPC)', flag: '--temporal-port' },
  ui: { what: 'Temporal Web UI', flag: '--ui-port' },
  emulator: { what: 'emulator', flag: '--emulator-port' },
  codec: { what: 'codec server', flag: '--codec-port' },
  webhook: { what: 'webhook receiver', flag: '--webhook-port' },
  metrics: { what: 'metrics', flag: '--metrics-port' },
} as const;
export type StackPort = keyof typeof STACK_PORTS;

/** Whether `port` can be bound on `host` now (EADDRINUSE: no; other errors are not ours to judge). */
function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolvePort(err.code !== 'EADDRINUSE'));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolvePort(true)));
  });
}

/**
 * Checks the stack's ports before anything starts, so a taken one is named with its flag
 * instead of surfacing as a bare EADDRINUSE from whichever part started last. Port 0 (any free
 * port) is never checked.
 */
export async function checkPortsFree(
  ports: Partial<Record<StackPort, number | undefined>>,
  host = '127.0.0.1',
): Promise<void> {
  for (const [name, port] of Object.entries(ports) as [StackPort, number | undefined][]) {
    if (!port || (await portFree(port, host))) continue;
    const { what, flag } = STACK_PORTS[name];
    throw new PortInUseError(`port ${port} (${what}) is in use: pick another with ${flag}`);
  }
}

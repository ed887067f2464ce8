// Ports a test picks for a process that binds them later (`pcds dev --temporal-port`, a metrics
// port, PostgreSQL). A port the kernel hands a listener on port 0 comes from its ephemeral range,
// where it also picks the source port of every outgoing connection: between the pick and the
// child's bind, a connection of any process of the run may take it (EADDRINUSE). These come from
// below that range, where the kernel hands out nothing on its own, and above the cluster's fixed
// ports (17xxx), each checked free when picked and never given twice by one process.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const LOWEST = 20_000;
const given = new Set<number>();

/** The first port of the kernel's ephemeral range (Linux; 32768 where it cannot be read). */
function ephemeralStart(): number {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > LOWEST + 1_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port that is free now and that no outgoing connection will take before it is bound. */
export async function freeListenPort(host = '127.0.0.1'): Promise<number> {
  const end = ephemeralStart();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (end - LOWEST));
    if (given.has(port) || !(await canBind(port, host))) continue;
    given.add(port);
    return port;
  }
  throw new Error(`no free port between ${LOWEST} and ${end}`);
}

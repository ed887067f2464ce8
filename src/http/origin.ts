// Whether a request's Origin is foreign: a browser page elsewhere than the server itself or the
// local machine. Servers that answer browsers (the MCP endpoints) refuse such requests, so a web
// page cannot drive them through a user's browser (DNS rebinding included).
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

export function isForeignOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return false;
  try {
    const url = new URL(origin);
    return url.host !== host && !LOOPBACK.has(url.hostname);
  } catch {
    return true;
  }
}

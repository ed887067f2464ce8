// Builds the Fastify app: parsers, the envelope for framework errors and unknown paths, and the
// route groups. Logging is off: replies must stay fast and PII must stay out of logs.
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { EmulatorContext } from './context.js';
import { registerMcpRoutes } from './mcp/routes.js';
import { openApiDocument } from './openapi.js';
import { errorBody, sendError } from './replies.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerDataRoutes } from './routes/data.js';
import { registerKeyRoutes } from './routes/keys.js';
import { registerUsageRoute } from './routes/usage.js';

export function buildServer(ctx: EmulatorContext): FastifyInstance {
  const app = Fastify({
    logger: false,
    trustProxy: ctx.opts.trustProxy,
    bodyLimit: 1024 * 1024,
    // Keep-alive longer than typical load generators' idle gaps.
    keepAliveTimeout: 65_000,
    // A client trickling its headers is cut off (checked every second, not Node's every 30 s).
    requestTimeout: ctx.opts.listener.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(
        ctx.opts.listener.headersTimeoutMs,
        ctx.opts.listener.requestTimeoutMs,
      ),
      connectionsCheckingInterval: 1_000,
    },
    // Errors met before routing (a malformed escape in the URL) come in the envelope too.
    frameworkErrors: (err, _req, reply) => {
      if (err.code === 'FST_ERR_BAD_URL')
        void sendError(reply, 400, 'invalid_request', 'The URL is malformed.');
      else void sendError(reply, 500, 'internal_error', 'An internal error occurred.');
    },
    // Errors of the HTTP parser itself (oversized headers: 431; garbage: 400), in the envelope.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const [status, reason, message] =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request Header Fields Too Large', 'The request headers are too large.']
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? [408, 'Request Timeout', 'The request did not arrive in time.']
            : [400, 'Bad Request', 'The request could not be read.'];
      const body = errorBody('invalid_request', message);
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\n` +
          `Content-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  });

  // The api_key/api_secret fallback may come as form fields.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );

  // A path served with other methods answers 405 with Allow, not 404.
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = methodsByPath.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    methodsByPath.set(route.url, methods);
  });

  const notAllowed = (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '';
    const allowed = methodsByPath.get(path);
    if (!allowed || allowed.has(req.method)) return undefined;
    return sendError(reply, 405, 'method_not_allowed', `${path} does not answer ${req.method}.`, {
      allow: [...allowed].join(', '),
    });
  };

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const status = err.statusCode ?? 500;
    // A method no route of the path answers fails before routing (e.g. its body): 405.
    const refused = notAllowed(req, reply);
    if (refused) return refused;
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendError(reply, 400, 'invalid_request', 'Content-Type must be application/json.');
    }
    if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return sendError(reply, 400, 'invalid_request', 'The body is empty; send a JSON object.');
    }
    if (status === 413) return sendError(reply, 413, 'invalid_request', 'The body is too large.');
    if (status >= 400 && status < 500) {
      // Parser errors (bad JSON): the message never echoes the body.
      return sendError(reply, 400, 'invalid_request', 'The body is not valid JSON.');
    }
    return sendError(reply, 500, 'internal_error', 'An internal error occurred.');
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    return (
      notAllowed(req, reply) ??
      sendError(reply, 404, 'not_found', `No route ${req.method} ${path}.`)
    );
  });

  app.get('/openapi.json', async (req, reply) => {
    const host = req.headers.host;
    return reply.send(openApiDocument(host ? `${req.protocol}://${host}` : undefined));
  });

  registerDataRoutes(app, ctx);
  registerUsageRoute(app, ctx);
  registerKeyRoutes(app, ctx);
  registerAdminRoutes(app, ctx);
  registerMcpRoutes(app, ctx);
  return app;
}

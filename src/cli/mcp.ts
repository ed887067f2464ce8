// `pcds mcp [--transport stdio|http]`: an MCP server through which an assistant starts and
// follows durable work (calls, batches, search exports) and reads the usage. Temporal is reached
// on the first tool that needs it; stdout belongs to the protocol under stdio. Over HTTP each
// caller shows a bearer token and sees only the work it started.
import { createRequire } from 'node:module';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Command } from 'commander';
import type { PcdsClient } from '../client.js';
import { configuredListenerLimits, loadConfig } from '../config.js';
import { extraAllowedHosts, resolveMcpTokens } from '../mcp-server/access.js';
import {
  callerScopedClient,
  callerScopeOf,
  tenantOfCaller,
  visibleTo,
} from '../mcp-server/caller-client.js';
import { UsageReadings } from '../mcp-server/usage-readings.js';
import { interactiveRequester } from '../contract/index.js';
import { callerFilesDir, fileRootDir } from '../mcp-server/file-root.js';
import { startPcdsMcpHttp } from '../mcp-server/http.js';
import { createPcdsMcpServer, type PcdsMcpDeps } from '../mcp-server/tools.js';
import { intArg } from './args.js';
import { action, UsageError } from './output.js';
import { connectPcdsClient } from './temporal-connection.js';
import { createUsageReader } from './usage.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

interface McpFlags {
  transport: string;
  host: string;
  port: number;
}

export function registerMcpCommand(program: Command): Command {
  return program
    .command('mcp')
    .description(
      'serve an MCP server for assistants: start and follow calls, batches and search exports, read usage',
    )
    .option('--transport <kind>', 'stdio or http (Streamable HTTP)', 'stdio')
    .option('--host <host>', 'address to listen on (http)', '127.0.0.1')
    .option(
      '--port <port>',
      'port to listen on (http; 0: any free port, shown)',
      intArg('--port', 0, 65535),
      8790,
    )
    .action(
      action(async (flags: McpFlags) => {
        if (flags.transport !== 'stdio' && flags.transport !== 'http')
          throw new UsageError('--transport must be stdio or http');
        const config = loadConfig();
        let client: Promise<PcdsClient> | undefined;
        const connectClient = () => {
          client ??= connectPcdsClient(config).catch((err: unknown) => {
            client = undefined;
            throw err;
          });
          return client;
        };
        // GET /usage takes its permits from the shared throttle, over the tools' Temporal client;
        // the tool answers from readings that cost the pool at most one request a minute a caller.
        const usage = createUsageReader(config, {
          connection: async () => (await connectClient()).temporal.connection,
        });
        const readings = new UsageReadings((tenant, query, keyId) =>
          usage.read(query, keyId, interactiveRequester(tenant)),
        );
        const rootDir = fileRootDir(config);
        const deps: PcdsMcpDeps = {
          version,
          files: rootDir,
          client: connectClient,
          // Over stdio the caller is whoever runs the server: PCDS_TENANT, the operator's by default.
          usage: (query, keyId) => readings.read(config.PCDS_TENANT, query, keyId),
        };
        const close = async () => {
          await usage.close();
          if (client) await (await client.catch(() => undefined))?.close();
        };
        if (flags.transport === 'stdio') {
          const transport = new StdioServerTransport();
          const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
          await createPcdsMcpServer(deps).connect(transport);
          process.stdin.once('end', () => void transport.close());
          await closed;
          await close();
          return;
        }
        const { tokens, file, generated } = await resolveMcpTokens(config, flags.host);
        const http = await startPcdsMcpHttp(
          (caller) => {
            const scope = callerScopeOf(tokens, caller);
            return createPcdsMcpServer({
              ...deps,
              files: callerFilesDir(rootDir, tokens, caller),
              client: async () => callerScopedClient(await deps.client(), scope),
              usage: (query, keyId) => readings.read(tenantOfCaller(caller), query, keyId),
              visible: visibleTo(scope),
            });
          },
          {
            tokens,
            host: flags.host,
            port: flags.port,
            allowedHosts: extraAllowedHosts(config.PCDS_MCP_ALLOWED_HOSTS),
            limits: configuredListenerLimits(config),
          },
        );
        // Shown this once: it is not printed again (it stays in its file, readable by this user).
        if (generated)
          process.stderr.write(
            `pcds mcp: access token (send it as "Authorization: Bearer <token>"), kept in ${generated.path}:\n${generated.token}\n`,
          );
        else if (file) process.stderr.write(`pcds mcp: the access token is in ${file}\n`);
        process.stderr.write(`pcds mcp: Streamable HTTP at ${http.url}\n`);
        await new Promise<void>((resolve) => {
          for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, resolve);
        });
        await http.close();
        await close();
      }),
    );
}

// `pcds mcp-login [--key-id id] [--scope s]`: signs the worker in to the service's MCP endpoint
// with OAuth and keeps the grant in the encrypted tokens file that workers read (PCDS_MCP_AUTH=
// oauth). A server that approves at once is signed in to headless; otherwise the command prints
// the authorization URL and reads back the URL the browser landed on.
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { loadConfig, requireKeys } from '../config.js';
import { mcpLogin } from '../http/mcp-oauth.js';
import { mcpTokenFile } from '../http/service-clients.js';
import { action, printJson, UsageError } from './output.js';

async function askForRedirect(url: URL): Promise<string> {
  if (!process.stdin.isTTY)
    throw new UsageError(
      'the authorization server asks for an interactive sign-in: run pcds mcp-login in a terminal',
    );
  process.stderr.write(`Open this URL in a browser and sign in:\n  ${url.toString()}\n`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await rl.question('Paste the URL the browser was sent back to: ');
  } finally {
    rl.close();
  }
}

export function registerMcpLoginCommand(program: Command): Command {
  return program
    .command('mcp-login')
    .description(
      'sign in to the MCP endpoint with OAuth; the grant is kept encrypted for the workers (PCDS_MCP_AUTH=oauth)',
    )
    .option(
      '--key-id <id>',
      'the configured key whose MCP calls use this grant (default: the first)',
    )
    .option('--scope <scopes>', "space-separated scopes (default: all of the endpoint's)")
    .option('--redirect-url <url>', 'redirect URL registered for the client')
    .action(
      action(async (opts: { keyId?: string; scope?: string; redirectUrl?: string }) => {
        const config = loadConfig();
        const keys = requireKeys(config);
        const keyId = opts.keyId ?? keys[0].id;
        if (!keys.some((k) => k.id === keyId))
          throw new UsageError(
            `no key with id "${keyId}" is configured; known ids: ${keys.map((k) => k.id).join(', ')}`,
          );
        const file = mcpTokenFile(config);
        const done = await mcpLogin({
          baseUrl: config.PCDS_BASE_URL,
          keyId,
          file,
          ...(opts.scope ? { scope: opts.scope } : {}),
          ...(opts.redirectUrl ? { redirectUrl: opts.redirectUrl } : {}),
          prompt: askForRedirect,
        });
        // Where the grant went and what it allows; never a token.
        printJson({ keyId, scope: done.scope ?? null, tokensFile: done.path });
      }),
    );
}

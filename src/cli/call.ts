// `pcds call <endpoint> --<param> <value> ...`: one durable call, printed as JSON.
import type { Command } from 'commander';
import {
  checkCallParams,
  checkTransport,
  validatedParams,
  type CallCacheOption,
} from '../client.js';
import {
  ASYNC_ENDPOINTS,
  TRANSPORTS,
  findEndpoint,
  type AsyncEndpointName,
  tenantIdProblem,
  type Transport,
} from '../contract/index.js';
import { loadConfig } from '../config.js';
import { cacheUseOf, parseAge } from '../calls/cache-policy.js';
import { action, printJson, UsageError } from './output.js';
import { parameterHelp, paramsFromArgs, requiredHelp } from './params.js';
import { connectPcdsClient, requireWorker, warnWithoutWorker } from './temporal-connection.js';
import { describeWaits } from '../client/wait-reasons.js';
import { callDoing, reportWaits } from './wait-reports.js';

const CALL_FLAGS = `Call options:
  --wait / --no-wait   wait for the outcome (default) or print the workflow id and return
  --id <key>           idempotency key: a repeated call with the same key and parameters
                       runs once; other parameters are refused (idempotency_conflict).
                       Only its keyed hash (PCDS_ID_SECRET) goes into the workflow id
  --id-prefix <label>  a readable label before that hash (never personal data)
  --key-id <id>        configured key to use (default: the first)
  --tenant <id>        whose call it is (default PCDS_TENANT, else the operator's):
                       its idempotency keys and cache entries are its own
  --webhook            wait for a webhook delivery, polling only as a fallback
  --transport <t>      http (default) or mcp: submit with the MCP endpoint's tool and
                       poll with check_status (endpoints that have an MCP tool)
  --max-age <age>      answer from the result cache only with a result fetched at most
                       this long ago (7d, 12h, 30m, 90s); default: any fresh entry
  --refresh            fetch again and replace the cached result
  --no-cache           neither read nor fill the result cache
  --json '{...}'       parameters as one JSON object (flags override its fields)`;

export function callHelp(): string {
  const width = Math.max(...ASYNC_ENDPOINTS.map((e) => e.name.length));
  const lines = ASYNC_ENDPOINTS.map((e) => `  ${e.name.padEnd(width)}  ${e.summary}`);
  return `Usage: pcds call <endpoint> [--<param> <value> ...] [options]

Runs one durable call and prints its outcome as JSON. Parameters of an endpoint:
pcds call <endpoint> --help

Endpoints:
${lines.join('\n')}

${CALL_FLAGS}
`;
}

export function endpointHelp(name: string): string {
  const e = findEndpoint(name)!;
  const required = requiredHelp(e);
  return `Usage: pcds call ${e.name} [--<param> <value> ...] [options]

${e.summary} (POST ${e.path}, result at ${e.resultPath}${e.mcpTool ? `; MCP tool ${e.mcpTool}, for --transport mcp` : `; no MCP tool`}).
${required.length ? `${required.join('\n')}\n` : ''}
Parameters:
${parameterHelp(e).join('\n')}

Arrays: a comma list or a repeated flag. Booleans: --flag, --no-flag or --flag false.

${CALL_FLAGS}
`;
}

interface CallFlags {
  wait: boolean;
  id?: string;
  idPrefix?: string;
  keyId?: string;
  tenant?: string;
  webhook: boolean;
  transport: Transport;
  /** How the call uses the result cache (default: use it). */
  cache: CallCacheOption;
}

/** Splits the call's own flags from the endpoint's parameters. */
export function splitFlags(args: string[]): { flags: CallFlags; rest: string[] } {
  const flags: CallFlags = { wait: true, webhook: false, transport: 'http', cache: {} };
  const cacheFlags: { noCache?: boolean; refresh?: boolean; maxAgeMs?: number } = {};
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    // `--id=key` as well as `--id key`, like the endpoint's parameters.
    const eq = args[i].indexOf('=');
    const inline =
      eq > 0 && /^--(id|id-prefix|key-id|tenant|transport|max-age)=/.test(args[i])
        ? args[i].slice(eq + 1)
        : undefined;
    const a = inline === undefined ? args[i] : args[i].slice(0, eq);
    const value = () => {
      const v = inline ?? args[++i];
      if (v === undefined || v === '' || v.startsWith('--'))
        throw new UsageError(`${a} needs a value`);
      return v;
    };
    if (a === '--wait') flags.wait = true;
    else if (a === '--no-wait') flags.wait = false;
    else if (a === '--webhook') flags.webhook = true;
    else if (a === '--id') flags.id = value();
    else if (a === '--id-prefix') flags.idPrefix = value();
    else if (a === '--key-id') flags.keyId = value();
    else if (a === '--tenant') {
      const t = value();
      const problem = tenantIdProblem(t);
      if (problem) throw new UsageError(`--tenant: ${problem}`);
      flags.tenant = t;
    } else if (a === '--transport') {
      const t = value();
      if (!(TRANSPORTS as readonly string[]).includes(t))
        throw new UsageError(`--transport must be one of ${TRANSPORTS.join(', ')} (got "${t}")`);
      flags.transport = t as Transport;
    } else if (a === '--no-cache') cacheFlags.noCache = true;
    else if (a === '--refresh') cacheFlags.refresh = true;
    else if (a === '--max-age') {
      try {
        cacheFlags.maxAgeMs = parseAge(value());
      } catch (err) {
        if (err instanceof UsageError) throw err;
        throw new UsageError(`--max-age: ${(err as Error).message}`);
      }
    } else rest.push(a);
  }
  if (cacheFlags.maxAgeMs !== undefined && (cacheFlags.noCache || cacheFlags.refresh))
    throw new UsageError(
      '--max-age reads the cache: it goes with neither --no-cache nor --refresh',
    );
  let use;
  try {
    use = cacheUseOf(cacheFlags);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  flags.cache =
    use.mode === 'off'
      ? false
      : use.mode === 'refresh'
        ? 'refresh'
        : use.maxAgeMs !== undefined
          ? { maxAge: use.maxAgeMs }
          : {};
  return { flags, rest };
}

export function registerCallCommand(program: Command): Command {
  return program
    .command('call')
    .description('run one durable endpoint call and print its outcome as JSON')
    .argument('[endpoint]', 'endpoint name, e.g. person_enrichment (see pcds call --help)')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .action(
      action(async (endpointName: string | undefined, _opts: unknown, cmd: Command) => {
        const args = cmd.args.slice(endpointName ? 1 : 0);
        const wantsHelp = args.includes('--help') || args.includes('-h');
        if (!endpointName || endpointName === '--help' || endpointName === '-h') {
          process.stdout.write(callHelp());
          if (!endpointName) process.exitCode = 2;
          return;
        }
        const endpoint = findEndpoint(endpointName);
        if (!endpoint || endpoint.polling === 'sync') {
          throw new UsageError(
            endpoint
              ? `${endpoint.name} is synchronous and has no durable call${endpoint.name === 'usage' ? '; use `pcds usage`' : ''}`
              : `unknown endpoint "${endpointName}"; \`pcds call --help\` lists the endpoints`,
          );
        }
        if (wantsHelp) {
          process.stdout.write(endpointHelp(endpoint.name));
          return;
        }
        const { flags, rest } = splitFlags(args);
        const params = paramsFromArgs(endpoint, rest);
        // Bad parameters are reported before anything connects (exit 2, like any usage error).
        const valid = validatedParams(endpoint.name, params);
        checkCallParams(endpoint, valid.params);
        checkTransport(endpoint, valid.params, flags.transport, flags.webhook);
        const config = loadConfig();
        const connected = await connectPcdsClient(config);
        const client = flags.tenant ? connected.withTenant(flags.tenant) : connected;
        try {
          // Waiting for an outcome with no worker would only hang: refused before anything starts.
          if (flags.wait)
            await requireWorker(
              client.temporal,
              config.PCDS_TASK_QUEUE,
              'nothing was started; with --no-wait the call is started and runs once a worker polls',
            );
          else
            await warnWithoutWorker(
              client.temporal,
              config.PCDS_TASK_QUEUE,
              'the call is started and runs when one does',
            );
          // A name and flags from the command line, checked above (validatedParams) and again
          // when the call starts.
          const handle = await client.startCall(endpoint.name as AsyncEndpointName, params, {
            ...(flags.id ? { idempotencyKey: flags.id } : {}),
            ...(flags.idPrefix ? { idempotencyKeyPrefix: flags.idPrefix } : {}),
            ...(flags.keyId ? { keyId: flags.keyId } : {}),
            ...(flags.webhook ? { webhook: true } : {}),
            ...(flags.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
            cache: flags.cache,
          });
          const ui = `${config.PCDS_TEMPORAL_UI_URL}/namespaces/${config.PCDS_TEMPORAL_NAMESPACE}/workflows/${handle.workflowId}`;
          if (!flags.wait) {
            printJson({ workflowId: handle.workflowId, ui });
            return;
          }
          process.stderr.write(`${handle.workflowId} (${ui})\n`);
          // A worker that stops after the check above, a full window, a budget: said, never silent.
          const outcome = await reportWaits(handle.result(), async () => {
            const w = await describeWaits(client.temporal, handle.workflowId);
            const doing = callDoing(w.state);
            return { reasons: w.reasons, ...(doing ? { doing } : {}) };
          });
          printJson(outcome);
          const next = outcome.outcome === 'found' ? outcome.page : undefined;
          // A person search's next page: a page POST on the same search (billable when fulfilled).
          if (next?.has_more && next.next_offset !== undefined)
            process.stderr.write(
              `next page: pcds call ${endpoint.name} --request-id ${outcome.requestId} --offset ${next.next_offset} --limit ${next.limit}\n`,
            );
        } finally {
          await connected.close();
        }
      }),
    );
}

// The checks a request to the client passes before anything starts: the endpoint and its
// parameters against the contract, the transport, paging, the cache option, the tenant and the
// cache scope. Each refusal is a PcdsUsageError naming the problem, never a personal value.
import {
  cacheDefaultOf,
  cacheScopeOf,
  CACHE_SCOPES,
  parseAge,
  type CacheOption,
  type CacheScope,
  type CacheUse,
} from '../calls/cache-policy.js';
import { PcdsUsageError } from '../client-errors.js';
import {
  findEndpoint,
  formatProblems,
  tenantIdProblem,
  mcpArgumentProblems,
  mcpUnsupportedReason,
  searchCallProblem,
  TRANSPORTS,
  validateInput,
  type EndpointDef,
} from '../contract/index.js';

/**
 * A cache option as the workflows and the store carry it; refused when the age is not one.
 * Omitted: the deployment's default (PCDS_CACHE).
 */
export function callCacheUse(option: CacheOption | undefined): CacheUse {
  if (option === undefined) return cacheDefaultOf(process.env.PCDS_CACHE);
  if (option === false) return { mode: 'off' };
  if (option === 'refresh') return { mode: 'refresh' };
  if (option.maxAge === undefined) return { mode: 'use' };
  const { maxAge } = option;
  if (typeof maxAge === 'number') {
    if (!Number.isFinite(maxAge) || maxAge < 0)
      throw new PcdsUsageError(
        'invalid_options',
        'cache.maxAge must be a number of milliseconds from 0, or a duration such as "7d"',
      );
    return { mode: 'use', maxAgeMs: Math.round(maxAge) };
  }
  try {
    return { mode: 'use', maxAgeMs: parseAge(maxAge) };
  } catch (err) {
    throw new PcdsUsageError('invalid_options', `cache.maxAge: ${(err as Error).message}`);
  }
}

/** A tenant id checked with the contract's rule (the message names the rule, never the value). */
export function checkedTenant(tenant: string): string {
  const problem = tenantIdProblem(tenant);
  if (problem) throw new PcdsUsageError('invalid_options', `tenant: ${problem}`);
  return tenant;
}

/** PCDS_CACHE_SCOPE checked: one of the scopes, or unset for the default. */
export function checkedCacheScope(setting: string | undefined): CacheScope {
  if (
    setting !== undefined &&
    setting !== '' &&
    !(CACHE_SCOPES as readonly string[]).includes(setting)
  )
    throw new PcdsUsageError(
      'invalid_options',
      `PCDS_CACHE_SCOPE must be one of ${CACHE_SCOPES.join(', ')}`,
    );
  return cacheScopeOf(setting);
}

export function validatedParams(
  endpointName: string,
  params: Record<string, unknown>,
): { endpoint: EndpointDef; params: Record<string, unknown> } {
  const endpoint = findEndpoint(endpointName);
  if (!endpoint)
    throw new PcdsUsageError(
      'unknown_endpoint',
      `unknown endpoint "${endpointName}" (see \`pcds call --help\`)`,
    );
  if (endpoint.polling === 'sync') {
    throw new PcdsUsageError(
      'not_async_endpoint',
      `${endpoint.name} is synchronous: there is no durable call to start`,
    );
  }
  const v = validateInput(endpoint, params);
  if (!v.ok)
    throw new PcdsUsageError(
      'invalid_params',
      `invalid parameters for ${endpoint.name}: ${formatProblems(v.problems)}`,
      v.problems,
    );
  return { endpoint, params: v.value };
}

/** Parameters a call cannot take although the endpoint does (a person search's cursor). */
export function checkCallParams(endpoint: EndpointDef, params: Record<string, unknown>): void {
  const problem = endpoint.polling === 'person_search' ? searchCallProblem(params) : undefined;
  if (problem)
    throw new PcdsUsageError(
      'invalid_params',
      `invalid parameters for ${endpoint.name}: ${problem}`,
    );
}

/**
 * A call over MCP needs an endpoint with a tool, no webhook, and parameters the tool accepts (a
 * tool takes fewer than its endpoint): refused here, naming the endpoint, before anything starts.
 */
export function checkTransport(
  endpoint: EndpointDef,
  params: Record<string, unknown>,
  transport: string,
  webhook: boolean,
): void {
  if (!(TRANSPORTS as readonly string[]).includes(transport))
    throw new PcdsUsageError(
      'invalid_options',
      `transport must be one of ${TRANSPORTS.join(', ')} (got "${transport}")`,
    );
  if (transport !== 'mcp') return;
  const why = mcpUnsupportedReason(endpoint, { webhook });
  if (why) throw new PcdsUsageError('mcp_unsupported', why);
  const problems = mcpArgumentProblems(endpoint.mcpTool!, params);
  if (problems.length)
    throw new PcdsUsageError(
      'invalid_params',
      `invalid parameters for ${endpoint.mcpTool} over MCP: ${formatProblems(problems)}`,
      problems,
    );
}

export const isIntIn = (n: number | undefined, min: number, max: number) =>
  n !== undefined && Number.isInteger(n) && n >= min && n <= max;

/** A search's paging: maxResults from 1 to `maxOfMax`, pageSize from 1 to 100. */
export function checkPaging(maxResults: number, pageSize: number | undefined, maxOfMax: number) {
  if (!isIntIn(maxResults, 1, maxOfMax))
    throw new PcdsUsageError(
      'invalid_options',
      `maxResults must be an integer from 1 to ${maxOfMax}`,
    );
  if (pageSize !== undefined && !isIntIn(pageSize, 1, 100))
    throw new PcdsUsageError('invalid_options', 'pageSize must be an integer from 1 to 100');
}

// The MCP endpoint's contract: paths, versions, the seven tools' arguments (strict: no other
// argument is accepted) and where each tool puts its completed result.
import { z } from 'zod';
import type { McpTool, ResultPath } from './catalogue.js';
import {
  PERSON_IDENTITY,
  PERSON_SEARCH_REQUIRED_ONE_OF,
  buildInputSchema,
  checkPageOffset,
  companyEnrichmentInput,
  companySearchInput,
  personAskInput,
  personEnrichmentShape,
  personLookupFieldsInput,
  personNewsfeedInput,
  personSearchShape,
} from './inputs.js';
import { nonEmpty } from './params.js';

export const MCP_SERVER_VERSION = '0.1.0';
export const MCP_PROTOCOL_VERSION = '2025-06-18';

export const MCP_PATHS = [
  '/mcp',
  '/mcp/message',
  '/mcp/status',
  '/.well-known/mcp',
  '/.well-known/oauth-authorization-server',
  '/.well-known/oauth-protected-resource',
  '/mcp/oauth/authorize',
  '/mcp/oauth/token',
] as const;

export const MCP_METHODS = [
  'initialize',
  'tools/list',
  'tools/call',
  'resources/list',
  'prompts/list',
] as const;

export const MCP_DATA_TOOLS = [
  'person_search',
  'person_enrichment',
  'person_lookup_fields',
  'person_newsfeed',
  'person_ask',
  'company_search',
  'company_enrichment',
] as const satisfies readonly McpTool[];

const without = (shape: Record<string, z.ZodType>, ...keys: string[]) =>
  Object.fromEntries(Object.entries(shape).filter(([k]) => !keys.includes(k)));

export const checkStatusArgs = z
  .object({
    request_id: nonEmpty,
    endpoint: z
      .enum(MCP_DATA_TOOLS, { message: `must be one of ${MCP_DATA_TOOLS.join(', ')}` })
      .optional(),
  })
  .strict();

/** Arguments of each tool: the HTTP parameters, minus the ones the MCP surface leaves out. */
export const MCP_TOOL_ARGS: Readonly<
  Record<McpTool | 'check_status', z.ZodType<Record<string, unknown>>>
> = {
  person_search: buildInputSchema(without(personSearchShape, 'type', 'high_freshness'), {
    strict: true,
    oneOf: PERSON_SEARCH_REQUIRED_ONE_OF,
  }).superRefine(checkPageOffset),
  person_enrichment: buildInputSchema(without(personEnrichmentShape, 'lookup_mode'), {
    strict: true,
    oneOf: PERSON_IDENTITY,
  }),
  person_lookup_fields: personLookupFieldsInput,
  person_newsfeed: personNewsfeedInput,
  person_ask: personAskInput,
  company_search: companySearchInput,
  company_enrichment: companyEnrichmentInput,
  check_status: checkStatusArgs,
};

/**
 * Where check_status puts a completed tool's result. person_lookup_fields is not stated; its
 * HTTP result path is used.
 */
export const MCP_RESULT_PATHS: Readonly<Record<McpTool, ResultPath>> = {
  person_search: 'data.results',
  company_search: 'data.results',
  company_enrichment: 'data.result',
  person_enrichment: 'data',
  person_ask: 'data',
  person_newsfeed: 'data',
  person_lookup_fields: 'data.result',
};

/** OAuth scopes of the MCP endpoint. */
export const MCP_SCOPES = ['svc.read', 'svc.search', 'svc.answer'] as const;
export type McpScope = (typeof MCP_SCOPES)[number];

/**
 * The scope each tool needs under OAuth: searches need svc.search, questions svc.answer, and
 * every profile or record read (company enrichment and the newsfeed included) svc.read.
 */
export const MCP_TOOL_SCOPES: Readonly<Record<McpTool, McpScope>> = {
  person_search: 'svc.search',
  company_search: 'svc.search',
  person_enrichment: 'svc.read',
  person_lookup_fields: 'svc.read',
  person_newsfeed: 'svc.read',
  company_enrichment: 'svc.read',
  person_ask: 'svc.answer',
};

/**
 * The date-shaped version of the tool manifest (GET /mcp). The interface shows only its shape;
 * the protocol version's date is used.
 */
export const MCP_MANIFEST_VERSION = '2025-06-18';

// The endpoint catalogue: one entry per endpoint of the interface. Validation, the client, the
// workflows, the CLI's help, the emulator and the OpenAPI document all read from here.
import type { z } from 'zod';
import {
  companyEnrichmentInput,
  companySearchInput,
  feedbackInput,
  freeFormInput,
  namedInputs,
  personAskInput,
  personEnrichInput,
  personEnrichmentInput,
  personLookupFieldsInput,
  personNewsfeedInput,
  personSearchInput,
  usageQuery,
  type IdentityGroup,
} from './inputs.js';

export type Product = 'search' | 'enrichment' | 'newsfeed' | 'none';
/** Where the payload sits under `data` of a completed poll. */
export type ResultPath = 'data.result' | 'data.results' | 'data.result.newsfeed' | 'data';
/** Which status table decides a poll: the general one, person search's, or none (synchronous). */
export type PollingContract = 'general' | 'person_search' | 'sync';
/** Price class for metering; amounts live in the emulator's price table (the service's are dynamic). */
export type PriceClass = 'search' | 'enrichment' | 'premium_enrichment' | 'newsfeed' | 'free';
export type McpTool =
  | 'person_search'
  | 'person_enrichment'
  | 'person_lookup_fields'
  | 'person_newsfeed'
  | 'person_ask'
  | 'company_search'
  | 'company_enrichment';

/**
 * One endpoint. The type parameters keep what the entry of ENDPOINTS says, so the client can type
 * a call by its endpoint's name: the name, the schema of its parameters, where its result sits
 * and how it is polled.
 */
export interface EndpointDef<
  Name extends string = string,
  Input extends z.ZodType<Record<string, unknown>> = z.ZodType<Record<string, unknown>>,
  Result extends ResultPath = ResultPath,
  Polling extends PollingContract = PollingContract,
> {
  /** Stable snake_case name used by the CLI, workflows and search attributes. */
  readonly name: Name;
  readonly path: `/${string}`;
  /** HTTP method of the submit (or of the single call, for synchronous endpoints). */
  readonly method: 'POST' | 'GET';
  readonly product: Product;
  readonly input: Input;
  readonly resultPath: Result;
  readonly polling: Polling;
  readonly price: PriceClass;
  /** Identity groups, used for the "input key" of a batch row and for emulator lookups. */
  readonly identity: readonly IdentityGroup[];
  readonly mcpTool?: McpTool;
  /** Product the matching MCP tool needs, where it differs from the HTTP product. */
  readonly mcpProduct?: Product;
  /** Off unless the key was granted access to it. */
  readonly restricted?: boolean;
  readonly summary: string;
}

const g = (...fields: string[]): IdentityGroup[] => fields.map((f) => f.split('+'));
const CONTACT = g('email', 'phone', 'social_media_url', 'name');

type AsyncPolling = Exclude<PollingContract, 'sync'>;
/** The schema of a loosely documented endpoint: any object, as given. */
type LooseInput = z.ZodType<Record<string, unknown>, Record<string, unknown>>;
/** An asynchronous entry as written: POST, and the general polling contract unless it says. */
interface Async<
  N extends string,
  I extends z.ZodType<Record<string, unknown>>,
  R extends ResultPath,
  P extends AsyncPolling,
> extends Omit<EndpointDef, 'name' | 'input' | 'resultPath' | 'method' | 'polling'> {
  readonly name: N;
  readonly input: I;
  readonly resultPath: R;
  readonly polling?: P;
}
const asyncEndpoint = <
  N extends string,
  I extends z.ZodType<Record<string, unknown>>,
  R extends ResultPath,
  P extends AsyncPolling = 'general',
>(
  e: Async<N, I, R, P>,
): EndpointDef<N, I, R, P> => ({ method: 'POST', polling: 'general' as P, ...e });

/** A synchronous entry: one request, nothing to poll. */
const syncEndpoint = <N extends string, I extends z.ZodType<Record<string, unknown>>>(
  e: Omit<EndpointDef<N, I, 'data', 'sync'>, 'resultPath' | 'polling'>,
): EndpointDef<N, I, 'data', 'sync'> => ({ ...e, resultPath: 'data', polling: 'sync' });

/** An endpoint from the "other asynchronous" family: named inputs, loose payload. */
function other<N extends string, R extends ResultPath>(
  name: N,
  path: `/${string}`,
  product: Product,
  resultPath: R,
  identity: string[],
  summary: string,
  required: string[] = [],
): EndpointDef<N, LooseInput, R, 'general'> {
  const groups = g(...identity);
  const fields = [...new Set([...groups.flat(), ...required])];
  return asyncEndpoint({
    name,
    path,
    product,
    input: fields.length ? namedInputs(fields, groups, required) : freeFormInput,
    resultPath,
    price: product === 'search' ? 'search' : product === 'newsfeed' ? 'newsfeed' : 'enrichment',
    identity: groups,
    summary,
  });
}

/** Additional paths of the family whose payloads are not shown: free-form input. */
function additional<N extends string>(
  name: N,
  path: `/${string}`,
  product: Product,
  summary: string,
  restricted = false,
) {
  return asyncEndpoint({
    name,
    path,
    product,
    input: freeFormInput,
    resultPath: 'data.result',
    price: product === 'search' ? 'search' : 'enrichment',
    identity: [],
    summary,
    ...(restricted ? { restricted } : {}),
  });
}

export const ENDPOINTS = [
  asyncEndpoint({
    name: 'person_search',
    path: '/person/search',
    product: 'search',
    input: personSearchInput,
    resultPath: 'data.results',
    polling: 'person_search',
    price: 'search',
    identity: g('query', 'custom_filters', 'docid_whitelist', 'cursor', 'request_id'),
    mcpTool: 'person_search',
    summary: 'People search by natural-language query or structured filters, paged',
  }),
  asyncEndpoint({
    name: 'person_enrichment',
    path: '/person/enrichment',
    product: 'enrichment',
    input: personEnrichmentInput,
    resultPath: 'data.result',
    price: 'enrichment',
    identity: CONTACT,
    mcpTool: 'person_enrichment',
    summary: 'Person profile from an email, phone, social profile URL or name',
  }),
  asyncEndpoint({
    name: 'person_enrich',
    path: '/person/enrich',
    product: 'enrichment',
    input: personEnrichInput,
    resultPath: 'data.result',
    price: 'premium_enrichment',
    identity: CONTACT,
    summary: 'Higher-tier person enrichment with every newsfeed source (costs more)',
  }),
  asyncEndpoint({
    name: 'person_lookup_fields',
    path: '/person/lookup-fields',
    product: 'enrichment',
    input: personLookupFieldsInput,
    resultPath: 'data.result',
    price: 'enrichment',
    identity: g('email', 'phone', 'social_media_url', 'name+company', 'name+city', 'name'),
    mcpTool: 'person_lookup_fields',
    summary: 'Targeted fields (emails, mobile, title, ...) of one person',
  }),
  asyncEndpoint({
    name: 'person_newsfeed',
    path: '/person/newsfeed',
    product: 'newsfeed',
    input: personNewsfeedInput,
    resultPath: 'data.result.newsfeed',
    price: 'newsfeed',
    identity: g('social_media_url'),
    mcpTool: 'person_newsfeed',
    mcpProduct: 'enrichment',
    summary: 'Recent social posts of a person',
  }),
  asyncEndpoint({
    name: 'person_ask',
    path: '/person/ask',
    product: 'enrichment',
    input: personAskInput,
    resultPath: 'data.result',
    price: 'enrichment',
    identity: g('email', 'phone', 'social_media_url'),
    mcpTool: 'person_ask',
    summary: 'A natural-language question about a person',
  }),
  asyncEndpoint({
    name: 'company_search',
    path: '/company/search',
    product: 'search',
    input: companySearchInput,
    resultPath: 'data.results',
    price: 'search',
    identity: g('industry', 'website_keyword', 'location'),
    mcpTool: 'company_search',
    summary: 'Companies by industry, website keyword and location',
  }),
  asyncEndpoint({
    name: 'company_enrichment',
    path: '/company/enrichment',
    product: 'enrichment',
    input: companyEnrichmentInput,
    resultPath: 'data.result',
    price: 'enrichment',
    identity: g('domain', 'email', 'phone', 'social_media_url'),
    mcpTool: 'company_enrichment',
    summary: 'Company record from a domain, email, phone or social profile URL',
  }),
  other(
    'person_identify',
    '/person/identify',
    'enrichment',
    'data.result',
    ['email', 'phone', 'social_media_url', 'username'],
    'Identify a person',
  ),
  other(
    'person_newsfeed_lookup',
    '/person/newsfeed-lookup',
    'newsfeed',
    'data.result.newsfeed',
    ['social_media_url'],
    'Newsfeed lookup by social profile URL',
  ),
  other(
    'person_connection_mapping',
    '/person/connection-mapping',
    'enrichment',
    'data.result',
    ['accounts', 'usernames', 'social_media_urls'],
    'Connections between accounts',
  ),
  other(
    'person_events',
    '/person/events',
    'enrichment',
    'data.result',
    ['email', 'phone', 'social_media_url', 'name'],
    'Events of a person',
  ),
  other(
    'person_social_profiles',
    '/person/social-profiles',
    'enrichment',
    'data.result',
    ['email', 'phone', 'social_media_url', 'name'],
    'Social profiles of a person',
  ),
  other(
    'person_interests',
    '/person/interests',
    'enrichment',
    'data.result',
    ['email', 'phone', 'social_media_url', 'name'],
    'Interests of a person',
  ),
  other(
    'person_interactions',
    '/person/interactions',
    'enrichment',
    'data.result',
    ['social_media_url', 'email', 'phone'],
    'Interactions of a person',
  ),
  other(
    'person_articlesearch',
    '/person/articlesearch',
    'search',
    'data.results',
    ['name', 'social_media_url', 'email'],
    'Articles about a person',
  ),
  other(
    'person_deep_research',
    '/person/deep-research',
    'enrichment',
    'data.result',
    ['email', 'phone', 'social_media_url', 'name+company', 'name+city'],
    'Deep research report on a person',
  ),
  other(
    'person_discovery',
    '/person/discovery',
    'search',
    'data.results',
    ['query'],
    'Discover people by query',
  ),
  other(
    'person_discover',
    '/person/discover',
    'search',
    'data.results',
    ['keywords'],
    'Discover people by keywords',
  ),
  other(
    'person_leads',
    '/person/leads',
    'search',
    'data.results',
    [],
    'Lead lists (inputs not stated)',
  ),
  other(
    'person_ask_lookup',
    '/person/ask-lookup',
    'enrichment',
    'data.result',
    ['email', 'phone', 'social_media_url'],
    'Question about a person, lookup variant',
    ['question'],
  ),
  other(
    'person_simulation',
    '/person/simulation',
    'enrichment',
    'data.result',
    ['email', 'phone', 'social_media_url', 'name'],
    'Simulated persona of a person',
  ),
  other(
    'person_single_social_lookup',
    '/person/single-social-lookup',
    'enrichment',
    'data.result',
    ['social_media_url'],
    'One social profile',
  ),
  other(
    'person_competitor_engagements',
    '/person/competitor-engagements',
    'enrichment',
    'data.results',
    ['social_media_url', 'email', 'phone'],
    'Engagements of a person with competitors',
  ),
  other(
    'company_needs',
    '/company/needs',
    'enrichment',
    'data.result',
    ['company_name', 'content'],
    'Needs of a company',
  ),
  other(
    'company_checkseller',
    '/company/checkseller',
    'enrichment',
    'data.result',
    [],
    'Seller check (inputs not stated)',
  ),
  other(
    'company_checkfeature',
    '/company/checkfeature',
    'enrichment',
    'data.result',
    [],
    'Feature check (inputs not stated)',
  ),
  other(
    'company_funding',
    '/company/funding',
    'enrichment',
    'data.result',
    ['company_name', 'company_domain'],
    'Funding of a company',
  ),
  other(
    'company_funders',
    '/company/funders',
    'enrichment',
    'data.result',
    ['company_name', 'company_domain'],
    'Funders of a company',
  ),
  other(
    'company_discovery',
    '/company/discovery',
    'search',
    'data.results',
    ['query'],
    'Discover companies by query',
  ),
  additional(
    'person_osint',
    '/person/osint',
    'enrichment',
    'OSINT report (disabled unless access is granted)',
    true,
  ),
  additional('person_email', '/person/email', 'enrichment', 'Email of a person'),
  additional('person_phone', '/person/phone', 'enrichment', 'Phone of a person'),
  additional('person_social_lookup', '/person/social-lookup', 'enrichment', 'Social lookup'),
  additional(
    'person_social_account_validator',
    '/person/social-account-validator',
    'enrichment',
    'Validate a social account',
  ),
  additional('company_employees', '/company/employees', 'search', 'Employees of a company'),
  additional('company_intent', '/company/intent', 'enrichment', 'Buying intent of a company'),
  additional(
    'company_competitor_engagements',
    '/company/competitor-engagements',
    'enrichment',
    'Engagements with competitors of a company',
  ),
  syncEndpoint({
    name: 'person_enrichment_feedback',
    path: '/person/enrichment/feedback',
    method: 'POST',
    product: 'enrichment',
    input: feedbackInput,
    price: 'free',
    identity: [],
    summary: 'Feedback on an enrichment (synchronous; nothing to poll)',
  }),
  syncEndpoint({
    name: 'usage',
    path: '/usage',
    method: 'GET',
    product: 'none',
    input: usageQuery,
    price: 'free',
    identity: [],
    summary: 'Credit usage of the account for a month (synchronous, free)',
  }),
] as const;

/** An entry of the catalogue, with its own types. */
export type Endpoint = (typeof ENDPOINTS)[number];
/** The name of an endpoint of the catalogue. */
export type EndpointName = Endpoint['name'];
/** An endpoint with a durable call (every one but the synchronous feedback and usage). */
export type AsyncEndpointName = Exclude<Endpoint, { polling: 'sync' }>['name'];
/** The catalogue's entry of an endpoint, by name. */
export type EndpointOf<N extends EndpointName> = Extract<Endpoint, { name: N }>;
/** The parameters an endpoint takes, as its schema types them. */
export type EndpointParams<N extends EndpointName> = z.input<EndpointOf<N>['input']>;

const byName = new Map<string, EndpointDef>(ENDPOINTS.map((e) => [e.name, e]));
const byPath = new Map<string, EndpointDef>(ENDPOINTS.map((e) => [e.path, e]));

/** Asynchronous data endpoints: a POST submits a job, a GET on the same path polls it. */
export const ASYNC_ENDPOINTS = ENDPOINTS.filter(
  (e): e is Exclude<Endpoint, { polling: 'sync' }> => e.polling !== 'sync',
);

/** Whether a name (a flag, a tool argument) is an endpoint with a durable call. */
export const isAsyncEndpointName = (name: string): name is AsyncEndpointName =>
  ASYNC_ENDPOINTS.some((e) => e.name === name);

/** Look an endpoint up by name (person_enrichment), path (/person/enrichment) or dashed name. */
export function findEndpoint(nameOrPath: string): EndpointDef | undefined {
  const key = nameOrPath.trim();
  return byName.get(key) ?? byPath.get(key) ?? byName.get(key.replace(/-/g, '_'));
}

export function getEndpoint(nameOrPath: string): EndpointDef {
  const e = findEndpoint(nameOrPath);
  if (!e) {
    throw new Error(
      `unknown endpoint "${nameOrPath}"; known endpoints: ${ENDPOINTS.map((x) => x.name).join(', ')}`,
    );
  }
  return e;
}

export function endpointByMcpTool(tool: string): EndpointDef | undefined {
  return ENDPOINTS.find((e) => e.mcpTool === tool);
}

// The OpenAPI 3.1 document of the emulated HTTP API, generated from the contract's catalogue and
// zod schemas, so the document, the validation and the client can never disagree.
import { ENDPOINTS, ERRORS, type EndpointDef } from '../contract/index.js';
import { jsonSchemaOf } from './json-schema.js';
import { mcpOAuthScheme, mcpOpenApiPaths } from './mcp/openapi-paths.js';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('ErrorEnvelope') } },
});

const jobResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('JobEnvelope') } },
});

const common = {
  '400': errorResponse(
    'invalid_request (a field missing, of the wrong type or out of range) or invalid_callback_url',
  ),
  '401': errorResponse('missing_credentials, invalid_credentials or api_key_expired'),
  '402': errorResponse('insufficient_credits'),
  '403': errorResponse(
    'subscription_inactive, subscription_required, ip_not_allowed or access_denied',
  ),
  '429': {
    ...errorResponse('rate_limit_exceeded'),
    headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'seconds to wait' } },
  },
  '503': errorResponse('service_unavailable'),
  '500': errorResponse('internal_error'),
};

const tooLarge = { '413': errorResponse('invalid_request: the body is larger than 1 MiB') };

function operations(e: EndpointDef): Record<string, unknown> {
  const ops: Record<string, unknown> = {};
  if (e.name === 'usage') {
    ops.get = {
      operationId: 'usage',
      summary: e.summary,
      parameters: [
        { name: 'month', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 12 } },
        { name: 'year', in: 'query', schema: { type: 'integer', minimum: 2020, maximum: 2030 } },
      ],
      responses: {
        '200': {
          description: 'Usage statistics',
          content: { 'application/json': { schema: ref('UsageEnvelope') } },
        },
        '400': errorResponse('invalid_month, invalid_year or invalid_date'),
        '401': errorResponse(
          'missing_api_key, invalid_api_key, missing_api_secret or invalid_api_secret',
        ),
        '403': errorResponse('api_key_disabled'),
        '429': common['429'],
        '500': errorResponse('internal_error'),
        '503': common['503'],
      },
    };
    return ops;
  }
  ops.post = {
    operationId: `${e.name}_submit`,
    summary: e.summary,
    tags: [e.product],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: jsonSchemaOf(e.input) } },
    },
    responses:
      e.polling === 'sync'
        ? {
            '200': {
              description: 'Recorded',
              content: { 'application/json': { schema: ref('Envelope') } },
            },
            ...common,
            ...tooLarge,
          }
        : {
            '202': jobResponse(
              'Accepted: data.request_id, data.status (queued or processing), data.message',
            ),
            ...(e.polling === 'person_search'
              ? {
                  '200': jobResponse(
                    'A page of a finished search, fulfilled at once (no rows: read them with GET)',
                  ),
                }
              : {}),
            ...(e.polling === 'person_search'
              ? {
                  '404': errorResponse(
                    'request_not_found: a request_id or cursor of no search of this key',
                  ),
                }
              : {}),
            ...common,
            ...tooLarge,
          },
  };
  if (e.polling !== 'sync') {
    const params: Record<string, unknown>[] = [
      {
        name: 'request_id',
        in: 'query',
        required: true,
        schema: { type: 'string', minLength: 1 },
      },
    ];
    if (e.polling === 'person_search') {
      params.push(
        {
          name: 'offset',
          in: 'query',
          schema: { type: 'integer', minimum: 0, maximum: 999, default: 0 },
        },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100 } },
      );
    }
    ops.get = {
      operationId: `${e.name}_poll`,
      summary: `Status and result of a ${e.path} job (free; result at ${e.resultPath})`,
      tags: [e.product],
      parameters: params,
      responses: {
        '200': jobResponse(
          'Terminal: completed (result filled), not_found, or a failed envelope for a stored 429',
        ),
        '202': jobResponse('Still running: completed false'),
        ...common,
        '404': errorResponse('request_not_found'),
        '500': errorResponse('search_error or internal_error: terminal processing failure'),
      },
    };
  }
  return ops;
}

export function openApiDocument(serverUrl?: string): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const e of ENDPOINTS) paths[e.path] = operations(e);
  Object.assign(paths, mcpOpenApiPaths());
  const errorCodes = ERRORS.filter(
    (x) => !x.local || ['invalid_request', 'not_found', 'method_not_allowed'].includes(x.code),
  ).map((x) => x.code);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Person and Company Data Service (emulated)',
      version: '0.1.0',
      description:
        'The HTTP API as emulated locally: asynchronous submit-then-poll endpoints, GET /usage, and the MCP endpoint (JSON-RPC 2.0).',
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    security: [{ apiKey: [], apiSecret: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        apiSecret: { type: 'apiKey', in: 'header', name: 'X-API-Secret' },
        mcpOAuth: mcpOAuthScheme(),
      },
      schemas: {
        Timestamp: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$' },
        Error: {
          type: 'object',
          required: ['code', 'message'],
          properties: { code: { type: 'string', enum: errorCodes }, message: { type: 'string' } },
        },
        Envelope: {
          type: 'object',
          required: ['success', 'timestamp'],
          properties: {
            success: { type: 'boolean' },
            data: { type: 'object' },
            error: ref('Error'),
            timestamp: ref('Timestamp'),
          },
        },
        ErrorEnvelope: {
          type: 'object',
          required: ['success', 'error', 'timestamp'],
          properties: {
            success: { const: false },
            error: ref('Error'),
            timestamp: ref('Timestamp'),
          },
        },
        Job: {
          type: 'object',
          required: ['request_id', 'status'],
          properties: {
            request_id: { type: 'string', pattern: '^[0-9a-f]{16,}_\\d{9,11}_\\d{1,4}$' },
            status: { type: 'string' },
            message: { type: 'string' },
            completed: { type: 'boolean' },
            result: {},
            results: { type: 'array' },
            has_more: { type: 'boolean' },
            next_cursor: { type: ['string', 'null'] },
            error: { oneOf: [ref('Error'), { type: 'null' }] },
            created_on: ref('Timestamp'),
            completed_on: ref('Timestamp'),
          },
        },
        JobEnvelope: {
          type: 'object',
          required: ['success', 'timestamp'],
          properties: {
            success: { type: 'boolean' },
            data: ref('Job'),
            error: ref('Error'),
            timestamp: ref('Timestamp'),
          },
        },
        Usage: {
          type: 'object',
          required: [
            'month',
            'year',
            'period',
            'credits_used',
            'requests_count',
            'limits',
            'breakdown',
          ],
          properties: {
            month: { type: 'integer', minimum: 1, maximum: 12 },
            year: { type: 'integer' },
            period: { type: 'string', pattern: '^\\d{4}-\\d{2}$' },
            credits_used: triple(),
            requests_count: triple(),
            limits: {
              type: 'object',
              properties: {
                monthly_allocation: { type: 'integer' },
                available_credits: { type: 'integer' },
                is_unlimited: { type: 'boolean' },
              },
            },
            breakdown: {
              type: 'object',
              properties: {
                search_results_returned: { type: 'integer' },
                enrichments_performed: { type: 'integer' },
                total_credits_consumed: { type: 'integer' },
              },
            },
          },
        },
        UsageEnvelope: {
          type: 'object',
          required: ['success', 'data', 'timestamp'],
          properties: { success: { const: true }, data: ref('Usage'), timestamp: ref('Timestamp') },
        },
      },
    },
  };
}

function triple() {
  return {
    type: 'object',
    required: ['total', 'search', 'enrichment'],
    properties: {
      total: { type: 'integer' },
      search: { type: 'integer' },
      enrichment: { type: 'integer' },
    },
  };
}

// The OpenAPI document states the rules the server enforces: for every endpoint, a JSON Schema
// validator reading the document and the zod schema the server validates with give the same
// verdict on probe inputs (empty, each way of satisfying the one-of rules, each field alone,
// aliases, unknown fields, wrong formats, out-of-range numbers); and every operation has an
// operationId and states the statuses it can answer.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { ENDPOINTS, MCP_TOOL_ARGS, type EndpointDef } from '../../../src/contract/index.js';
import { openApiDocument } from '../../../src/emulator/index.js';
import { TOOLS } from '../../../src/emulator/mcp/tools.js';

type Schema = Record<string, any>;

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);

/** A value the schema accepts for one property (the first branch of a union). */
function sample(s: Schema): unknown {
  if (s.anyOf) return sample(s.anyOf[0]);
  if (s.oneOf) return sample(s.oneOf[0]);
  if (s.const !== undefined) return s.const;
  if (s.enum) return s.enum[0];
  if (s.format === 'email') return 'ada@example.org';
  if (s.format === 'uri') return 'https://www.linkedin.com/in/ada';
  if (s.format === 'date') return '2024-01-31';
  switch (s.type) {
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return [s.items ? sample(s.items) : 'x'];
    case 'object':
      return { titles: ['engineer'] };
    default:
      return s.pattern === '^[a-z0-9]+(_[a-z0-9]+)*$' ? 'linkedin_url' : 'value';
  }
}

/** Inputs that probe every rule of a body schema. */
function probes(body: Schema): Record<string, unknown>[] {
  const props: Record<string, Schema> = body.properties ?? {};
  const fields = Object.keys(props).filter((f) => f !== 'callback_url');
  const good = (f: string) => sample(props[f]);
  const out: Record<string, unknown>[] = [{}, { not_a_parameter: 'x' }];
  for (const f of fields) out.push({ [f]: good(f) });
  // Each way of satisfying the one-of rules, with the always-required fields.
  const required: string[] = body.required ?? [];
  const groups: Schema[] = [
    ...(body.anyOf ?? []),
    ...(body.allOf ?? []).flatMap((x: Schema) => x.anyOf),
  ];
  const base = Object.fromEntries(required.map((f) => [f, good(f)]));
  out.push(base);
  for (const g of groups) {
    const input = { ...base, ...Object.fromEntries(g.required.map((f: string) => [f, good(f)])) };
    // A second rule (allOf) is satisfied by its first way.
    for (const other of body.allOf ?? [])
      for (const f of other.anyOf[0].required) input[f] ??= good(f);
    out.push(input);
    out.push({ ...input, not_a_parameter: 'x' });
    for (const f of fields) {
      const p = props[f];
      if (p.format === 'email') out.push({ ...input, [f]: 'not an email' });
      if (p.format === 'email') out.push({ ...input, [f]: `${'a'.repeat(65)}@example.org` });
      if (p.format === 'uri') out.push({ ...input, [f]: 'not a uri' });
      if (p.maximum !== undefined) out.push({ ...input, [f]: p.maximum + 1 });
      if (p.minimum !== undefined) out.push({ ...input, [f]: p.minimum - 1 });
      if (p.enum) out.push({ ...input, [f]: 'not-one-of-them' });
      if (p.type === 'boolean') out.push({ ...input, [f]: 'yes' });
    }
  }
  return out;
}

function agree(name: string, schema: Schema, zod: { safeParse(v: unknown): { success: boolean } }) {
  const validate = ajv.compile(schema);
  const disagreements: string[] = [];
  const cases = probes(schema);
  for (const input of cases) {
    const byDoc = validate(input);
    const byServer = zod.safeParse(input).success;
    if (byDoc !== byServer)
      disagreements.push(`${JSON.stringify(input)}: document ${byDoc}, server ${byServer}`);
  }
  expect(disagreements, name).toEqual([]);
  // The probes are not vacuous: some are accepted and some refused.
  expect(
    cases.some((c) => validate(c)),
    `${name}: a probe is accepted`,
  ).toBe(true);
  expect(
    cases.some((c) => !validate(c)),
    `${name}: a probe is refused`,
  ).toBe(true);
}

const doc = openApiDocument() as Schema;

describe('the OpenAPI document states what the server enforces', () => {
  it.each(ENDPOINTS.filter((e) => e.method === 'POST').map((e) => [e.name, e] as const))(
    'rule: %s request body: document and server agree on every probe',
    (_name, e: EndpointDef) => {
      const body = doc.paths[e.path].post.requestBody.content['application/json'].schema;
      agree(e.path, body, e.input);
    },
  );

  it.each(TOOLS.map((t) => [t.name, t] as const))(
    'rule: MCP tool %s: its inputSchema and the server agree on every probe',
    (name, t) => {
      agree(name, t.inputSchema, MCP_TOOL_ARGS[name]);
    },
  );

  it('rule: every operation has a unique operationId and states its responses (errors included)', () => {
    const ids: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Schema>)) {
      for (const [method, op] of Object.entries(item)) {
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z_]+$/);
        ids.push(op.operationId);
        expect(Object.keys(op.responses).length, `${method} ${path}`).toBeGreaterThan(0);
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    for (const e of ENDPOINTS.filter((x) => x.method === 'POST' && x.polling !== 'sync')) {
      const codes = Object.keys(doc.paths[e.path].post.responses);
      expect(codes, e.path).toEqual(
        expect.arrayContaining(['202', '400', '401', '402', '403', '413', '429', '500', '503']),
      );
      const poll = Object.keys(doc.paths[e.path].get.responses);
      expect(poll, e.path).toEqual(expect.arrayContaining(['200', '202', '404', '429']));
    }
  });
});

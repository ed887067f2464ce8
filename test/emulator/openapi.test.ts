import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { ENDPOINTS } from '../../src/contract/index.js';
import { start } from './helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

describe('OpenAPI', () => {
  it('rule: GET /openapi.json is an OpenAPI 3.1 document of every catalogue endpoint, generated from the same schemas', async () => {
    const res = await fetch(`${em.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toBe('3.1.0');
    for (const e of ENDPOINTS) {
      expect(doc.paths[e.path], e.path).toBeDefined();
      if (e.method === 'POST') {
        const schema = doc.paths[e.path].post.requestBody.content['application/json'].schema;
        expect(schema.type, e.path).toBe('object');
      }
      if (e.polling !== 'sync') expect(doc.paths[e.path].get.parameters[0].name).toBe('request_id');
    }
    const search = doc.paths['/person/search'].post.requestBody.content['application/json'].schema;
    expect(search.properties.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
    expect(search.properties.type.enum).toEqual(['light', 'medium', 'premium']);
    expect(search.additionalProperties).toBe(false);
    expect(doc.components.securitySchemes.apiKey).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
    });
  });
});

// zod schemas as JSON Schema, for the OpenAPI document and the MCP tool list.
import { z } from 'zod';

/** A zod schema as the JSON Schema (2020-12) of what a caller sends, without `$schema`. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const s = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as Record<string, unknown>;
  delete s.$schema;
  return s;
}

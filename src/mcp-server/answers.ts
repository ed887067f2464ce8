// How the tools of `pcds mcp` answer: a JSON document (text and structured content), or a tool
// error the assistant can read, whose message never holds personal data or a path of the server.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { PcdsError } from '../contract/pcds-error.js';

export const json = (doc: unknown): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(doc) }],
  structuredContent: doc as Record<string, unknown>,
});

/** An id this caller cannot see: the same answer as one that names nothing. */
export class NotFound extends PcdsError {
  override name = 'NotFound';
}

/**
 * Expected failures (a bad parameter, an unknown id, a failed call) are tool errors the
 * assistant can read and act on: the project's own errors, whose messages hold no personal data
 * and no path of the server. Any other error's message may (a Node file error names its path):
 * a file error gives its errno code alone, anything else a generic message.
 */
export async function answer(work: () => Promise<unknown>): Promise<CallToolResult> {
  const failed = (code: string, message: string): CallToolResult => ({
    ...json({ error: { code, message } }),
    isError: true,
  });
  try {
    return json(await work());
  } catch (err) {
    // Temporal out of reach is one of them (temporal_unreachable, its message naming the address).
    if (err instanceof PcdsError) return failed(err.code, err.message);
    const errno = (err as NodeJS.ErrnoException | undefined)?.code;
    if (typeof errno === 'string' && /^E[A-Z0-9]+$/.test(errno))
      return failed('io_error', `the file operation failed (${errno})`);
    return failed('internal_error', 'The tool failed unexpectedly.');
  }
}

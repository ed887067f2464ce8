// Whose work a `pcds mcp` caller sees: its own always; work started outside `pcds mcp` only when
// the server has the operator's lone `default` token.
import { describe, expect, it } from 'vitest';
import { callerScopeOf } from '../../../src/mcp-server/caller-client.js';

const token = 't'.repeat(32);

describe('callerScopeOf', () => {
  it('shows untagged work to the lone `default` token only', () => {
    const lone = [{ id: 'default', token }];
    expect(callerScopeOf(lone, { tokenId: 'default' }).untaggedVisible).toBe(true);
  });

  it('hides it from a lone named token and from every caller among several', () => {
    expect(callerScopeOf([{ id: 'ci', token }], { tokenId: 'ci' }).untaggedVisible).toBe(false);
    const several = [
      { id: 'default', token },
      { id: 'ci', token: `${token}c` },
    ];
    for (const tokenId of ['default', 'ci'])
      expect(callerScopeOf(several, { tokenId }).untaggedVisible).toBe(false);
  });
});

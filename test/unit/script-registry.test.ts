import path from 'node:path';

import { SCRIPT_CODES, ScriptFencedError, scriptReply } from '../../shared/redis/script-codes';
import { defineScript } from '../../shared/redis/scripts';

const lua = (name: string) => path.join('/features', 'lua', name);

describe('Script registry and codes (no Redis)', () => {
  it('When a script is declared with a key count its file name does not carry, then it is refused', () => {
    expect(() =>
      defineScript({ name: 'miscounted', file: lua('miscounted-2.lua'), numberOfKeys: 3 }),
    ).toThrow('does not carry its key count');
    expect(() => defineScript({ name: 'unnamed', file: lua('unnamed.lua'), numberOfKeys: 1 })).toThrow(
      'does not carry its key count',
    );
  });

  it('When a name is declared twice for another file, then it is refused; the same declaration again is kept once', () => {
    const first = defineScript({ name: 'twice', file: lua('twice-1.lua'), numberOfKeys: 1 });
    expect(defineScript({ name: 'twice', file: lua('twice-1.lua'), numberOfKeys: 1 })).toBe(first);
    expect(() => defineScript({ name: 'twice', file: lua('other-1.lua'), numberOfKeys: 1 })).toThrow(
      'defined twice',
    );
  });

  it('When a script is declared again with fewer keys than its file takes (its optional keys left out), then it is kept; not with as many or more', () => {
    expect(
      defineScript({ name: 'lean', file: lua('lean-6.lua'), numberOfKeys: 4, withoutOptionalKeys: true }),
    ).toMatchObject({ numberOfKeys: 4 });
    expect(() =>
      defineScript({ name: 'leanAll', file: lua('lean-6.lua'), numberOfKeys: 6, withoutOptionalKeys: true }),
    ).toThrow('does not carry its key count');
    expect(() =>
      defineScript({ name: 'leanMore', file: lua('lean-6.lua'), numberOfKeys: 7, withoutOptionalKeys: true }),
    ).toThrow('does not carry its key count');
    expect(() =>
      defineScript({
        name: 'leanVariable',
        file: lua('lean-n.lua'),
        numberOfKeys: 'n',
        withoutOptionalKeys: true,
      }),
    ).toThrow('does not carry its key count');
  });

  it('When a script answers a code, then the one mapper turns it into its typed error; other replies pass', () => {
    expect(scriptReply('appendEvents', 7)).toBe(7);
    expect(scriptReply('applyProjectionBatch', 0)).toBe(0);
    expect(() => scriptReply('appendEvents', SCRIPT_CODES.FENCED)).toThrow(ScriptFencedError);
    expect(() => scriptReply('appendEvents', -99)).toThrow('appendEvents answered an unknown code -99');
  });
});

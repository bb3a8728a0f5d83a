// Mode 5 telegrams shorter than the N encrypted blocks their configuration field announces:
// the whole blocks that arrived are decrypted (the 2F2F check still verifies the key) and a
// partial last block is dropped; mode 7 (MAC over the frame as sent) stays invalid.
import t from 'tap'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { S } from '../../src/decode/layout.js'
import { loadVectors, expectedCanonical, close } from './vectors.js'

/** The telegram without its last `cut` bytes, L-field set to the new length. */
function shorten(hex: string, cut: number): string {
  const b = Buffer.from(hex, 'hex').subarray(0, -cut)
  b[0] = b.length - 1
  return b.toString('hex')
}

const vectors = loadVectors('crypto-visible.jsonl')

t.test(
  'mode 5: a partial last block is dropped, the register in earlier blocks decodes',
  async (t) => {
    const core = loadWasmCore()
    let n = 0
    for (const v of vectors.filter((x) => x.scheme === 'mode5' && x.expect === 'ok')) {
      const l = v.link as { cipher_offset: number; cipher_len: number; register_offset: number }
      const frameLen = v.telegram.length / 2
      const cipherEnd = l.cipher_offset + l.cipher_len
      if (cipherEnd !== frameLen || l.cipher_len < 32) continue // needs a tail block to cut into
      // the register (DIF, VIF, 4 data bytes at most 8) must lie in the blocks before the last
      if (l.register_offset + 8 > cipherEnd - 16) continue
      for (const cut of [1, 5, 15]) {
        const o = decodeTelegramSync(core, shorten(v.telegram, cut), v.key)
        t.equal(o.status, 'ok', `${v.source} cut ${cut}`)
        if (o.status === 'ok') t.ok(close(o.value, expectedCanonical(v.register!).value))
        t.equal(core.CTRL[S.ENCR_SHORT], 16, 'one block short')
        n++
      }
      // with another key the first block fails its 2F2F check as before
      const w = decodeTelegramSync(core, shorten(v.telegram, 5), '000102030405060708090A0B0C0D0E0F')
      t.equal(w.status, 'rejected_undecodable')
    }
    t.ok(n > 0, `${n} shortened telegrams decoded`)
  },
)

t.test('mode 7: a shortened telegram stays invalid', async (t) => {
  const core = loadWasmCore()
  const v = vectors.find((x) => x.scheme === 'mode7' && x.expect === 'ok')!
  const o = decodeTelegramSync(core, shorten(v.telegram, 5), v.key)
  t.same(o, { status: 'invalid', reason: 'encrypted length exceeds frame' })
})

// The decoder's AES (src/decode/crypto.ts) keeps each meter key's ECB ciphers and makes CBC,
// CTR and CMAC from them: each against node:crypto's own mode on the same input, for keys used
// again and again (the kept ciphers), keys dropped and made again (more keys than are kept),
// and lengths from nothing to many blocks; CMAC also against RFC 4493's vectors.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import t from 'tap'
import {
  aesCbcDecrypt,
  aesCtr,
  clearKeptKeys,
  cmac,
  keptKeys,
  keyHash,
  MAX_KEPT_KEYS,
  sweepKeys,
} from '../../src/decode/crypto.js'

const cbcRef = (key: Uint8Array, iv: Uint8Array, data: Uint8Array) => {
  const d = createDecipheriv('aes-128-cbc', key, iv)
  d.setAutoPadding(false)
  return Buffer.concat([d.update(data), d.final()])
}
const ctrRef = (key: Uint8Array, ctr: Uint8Array, data: Uint8Array) => {
  const d = createDecipheriv('aes-128-ctr', key, ctr)
  return Buffer.concat([d.update(data), d.final()])
}
const hex = (s: string) => Buffer.from(s.replace(/\s/g, ''), 'hex')

t.test('CMAC: RFC 4493 examples, kept and one-off key alike', async (t) => {
  const key = hex('2b7e1516 28aed2a6 abf71588 09cf4f3c')
  const msg = hex(
    '6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51' +
      '30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710',
  )
  const cases: [number, string][] = [
    [0, 'bb1d6929 e9593728 7fa37d12 9b756746'],
    [16, '070a16b4 6b4d4144 f79bdd9d d04a287c'],
    [40, 'dfa66747 de9ae630 30ca3261 1497c827'],
    [64, '51f0bebf 7e3b9d92 fc497417 79363cfe'],
  ]
  for (let round = 0; round < 3; round++)
    for (const [len, mac] of cases) {
      t.same(cmac(key, msg.subarray(0, len)), hex(mac), `kept, ${len} bytes, round ${round}`)
      t.same(cmac(key, msg.subarray(0, len), false), hex(mac), `one-off, ${len} bytes`)
    }
})

t.test('CBC and CTR: a kept key used again and again, with new IVs and lengths', async (t) => {
  const key = randomBytes(16)
  let cbcSame = 0
  let ctrSame = 0
  for (let i = 0; i < 300; i++) {
    const iv = randomBytes(16)
    const blocks = i % 9
    const data = randomBytes(blocks * 16)
    if (cbcRef(key, iv, data).equals(aesCbcDecrypt(key, iv, data))) cbcSame++
    // CTR takes any length; a counter near 2^128 carries through every byte.
    const ctr = i % 10 === 0 ? Buffer.alloc(16, 0xff) : iv
    const odd = randomBytes(i % 70)
    if (ctrRef(key, ctr, odd).equals(aesCtr(key, ctr, odd))) ctrSame++
  }
  t.equal(cbcSame, 300, 'CBC equals node:crypto')
  t.equal(ctrSame, 300, 'CTR equals node:crypto')
})

t.test(
  'more keys than there is room for: the rest are set up per use, then swept in',
  async (t) => {
    clearKeptKeys()
    const keys = Array.from({ length: MAX_KEPT_KEYS + 100 }, () => randomBytes(16))
    const iv = randomBytes(16)
    const data = randomBytes(48)
    const check = (from: number, to: number) => {
      let same = 0
      for (let i = from; i < to; i++)
        if (cbcRef(keys[i]!, iv, data).equals(aesCbcDecrypt(keys[i]!, iv, data))) same++
      return same
    }
    t.equal(check(0, keys.length), keys.length, 'every key decrypts, kept or not')
    t.equal(keptKeys(), MAX_KEPT_KEYS, 'the first keys fill the room, no more')
    t.equal(check(0, keys.length), keys.length, 'and again')
    // A sweep drops the keys not used since the sweep before it: the first one (made when the
    // set was full) only marks them, so those used in between survive the second.
    const t0 = 1e12
    sweepKeys(t0)
    t.equal(keptKeys(), MAX_KEPT_KEYS, 'a first sweep marks')
    check(0, 1000)
    sweepKeys(t0 + 1)
    t.equal(keptKeys(), 1000, 'the keys used since stay')
    t.equal(check(MAX_KEPT_KEYS, keys.length), 100, 'the keys left out decrypt')
    t.equal(keptKeys(), 1100, 'and found room')
    clearKeptKeys()
  },
)

t.test('two keys with the same hash: each decrypts with its own', async (t) => {
  clearKeptKeys()
  // A 32-bit hash: a birthday search finds two keys that share one.
  const seen = new Map<number, Buffer>()
  let pair: [Buffer, Buffer] | null = null
  while (!pair) {
    const k = randomBytes(16)
    const other = seen.get(keyHash(k))
    if (other) pair = [other, k]
    else seen.set(keyHash(k), k)
  }
  const iv = randomBytes(16)
  const data = randomBytes(32)
  for (let round = 0; round < 2; round++)
    for (const k of pair) t.same(aesCbcDecrypt(k, iv, data), cbcRef(k, iv, data))
  t.equal(keptKeys(), 1, 'the first is kept, the second set up per use')
  clearKeptKeys()
})

t.test(
  'not whole blocks: CBC refuses as the one-off cipher does, the kept one unharmed',
  async (t) => {
    const key = randomBytes(16)
    const iv = randomBytes(16)
    t.throws(() => aesCbcDecrypt(key, iv, randomBytes(20)))
    const data = randomBytes(32)
    t.same(aesCbcDecrypt(key, iv, data), cbcRef(key, iv, data))
  },
)

t.test(
  'a key that is not 16 bytes is refused as node:crypto refuses it, and not kept',
  async (t) => {
    const before = keptKeys()
    const iv = randomBytes(16)
    const data = randomBytes(32)
    for (const len of [8, 24, 32]) {
      t.throws(() => aesCbcDecrypt(randomBytes(len), iv, data), `${len} bytes`)
      t.throws(() => aesCtr(randomBytes(len), iv, data), `${len} bytes, CTR`)
    }
    t.equal(keptKeys(), before)
  },
)

t.test('a one-off key is not kept', async (t) => {
  const before = keptKeys()
  const key = randomBytes(16)
  const data = randomBytes(32)
  const iv = randomBytes(16)
  t.same(aesCbcDecrypt(key, iv, data, false), cbcRef(key, iv, data))
  cmac(key, data, false)
  t.equal(keptKeys(), before)
})

t.test('the ciphertext and IV are not changed', async (t) => {
  const key = randomBytes(16)
  const iv = randomBytes(16)
  const data = randomBytes(64)
  const [iv0, data0] = [Buffer.from(iv), Buffer.from(data)]
  aesCbcDecrypt(key, iv, data)
  aesCtr(key, iv, data)
  cmac(key, data)
  t.same(iv, iv0)
  t.same(data, data0)
})

t.test('an ECB encryption is what createCipheriv gives', async (t) => {
  // CMAC's first step with a kept key (L = AES(K, 0)) checked on its own.
  const key = randomBytes(16)
  const e = createCipheriv('aes-128-ecb', key, null)
  e.setAutoPadding(false)
  const L = e.update(Buffer.alloc(16))
  t.equal(L.length, 16)
  t.same(
    aesCtr(key, Buffer.alloc(16), Buffer.alloc(16)),
    L,
    'CTR of zeros at counter 0 is AES(K, 0)',
  )
})

// AES-128 for the decoder host, on node:crypto (AES-NI): CBC (modes 5 and 7),
// CTR (ELL) and CMAC (mode 7 key derivation and AFL MAC).
//
// A meter's key is the same telegram after telegram, and setting a cipher up is most of what
// a telegram's AES costs: `createDecipheriv` (a stream object around OpenSSL's context and
// key schedule) took ~1.5 of the 2.0 µs a 96-byte mode 5 CBC decrypt cost (scratch), the
// blocks themselves tens of nanoseconds. So each meter key's ECB ciphers are kept
// (`KeyCiphers`), and CBC, CTR and CMAC are made from them here: the chaining is an XOR per
// byte. Keys derived for one telegram (mode 7's), and keys that find no room, get a cipher set up
// for that telegram, as every telegram did before.
import { createCipheriv, createDecipheriv, type Cipheriv, type Decipheriv } from 'node:crypto'

const ZERO = Buffer.alloc(16)

/**
 * Meter keys whose ciphers a thread keeps (~1.7 KB each, mostly the cipher objects). A worker
 * sees the meters its affinity gives it (affinity.ts). A key that finds no room pays the
 * set-up per telegram, as every telegram did before ciphers were kept. Keys are not pushed
 * out one by one to make room: a cipher object that dies old costs the GC far more than one
 * made and dropped at once (scratch, 20,000 keys in turn through 16,384 places: 6.3 µs per
 * decrypt evicting the least recently used, 1.5 µs keeping the first 16,384 and setting the
 * rest up each time, 2.1 µs as before). Instead a full set is swept of the keys not used
 * since the sweep before, at most every `SWEEP_MS`, so a changing population gets in.
 */
export const MAX_KEPT_KEYS = 16_384
export const SWEEP_MS = 5 * 60_000

/** The ECB ciphers of one key, each made when first needed, and its CMAC subkeys. */
interface KeyCiphers {
  /** The key's bytes as four 32-bit words (no buffer of its own per key for the GC to track). */
  w0: number
  w1: number
  w2: number
  w3: number
  enc: Cipheriv | null
  dec: Decipheriv | null
  k1: Buffer | null
  k2: Buffer | null
  used: boolean
}

const kept = new Map<number, KeyCiphers>()
let lastSweep = -Infinity

/** Bytes 4i to 4i + 3 of a 16-byte key as one 32-bit word. */
const word = (k: Uint8Array, i: number): number =>
  k[4 * i]! | (k[4 * i + 1]! << 8) | (k[4 * i + 2]! << 16) | (k[4 * i + 3]! << 24)

/** Where a key is looked for (then compared in full); exported for tests. */
export const keyHash = (k: Uint8Array): number => {
  let h = Math.imul(word(k, 0), 0x9e3779b1)
  h = Math.imul(h ^ word(k, 1), 0x85ebca6b)
  h = Math.imul(h ^ word(k, 2), 0xc2b2ae35)
  h = Math.imul(h ^ word(k, 3), 0x27d4eb2f)
  return h ^ (h >>> 15)
}

const sameKey = (c: KeyCiphers, k: Uint8Array): boolean =>
  c.w0 === word(k, 0) && c.w1 === word(k, 1) && c.w2 === word(k, 2) && c.w3 === word(k, 3)

/** Drops the kept keys not used since the last sweep (`now` in ms; tests pass their own). */
export function sweepKeys(now = Date.now()): void {
  lastSweep = now
  for (const [h, c] of kept)
    if (c.used) c.used = false
    else kept.delete(h)
}

/** The key's kept ciphers, made room for if there is any; null where there is none. */
function keptFor(key: Uint8Array): KeyCiphers | null {
  // AES-128 keys only; anything else goes the one-off way (and is refused there).
  if (key.length !== 16) return null
  const h = keyHash(key)
  const c = kept.get(h)
  if (c !== undefined) {
    if (!sameKey(c, key)) return null // another key with the same hash: not kept
    c.used = true
    return c
  }
  if (kept.size >= MAX_KEPT_KEYS) {
    const now = Date.now()
    if (now - lastSweep < SWEEP_MS) return null
    sweepKeys(now)
    if (kept.size >= MAX_KEPT_KEYS) return null
  }
  const made: KeyCiphers = {
    w0: word(key, 0),
    w1: word(key, 1),
    w2: word(key, 2),
    w3: word(key, 3),
    enc: null,
    dec: null,
    k1: null,
    k2: null,
    used: true,
  }
  kept.set(h, made)
  return made
}

/** ECB ciphers never see `final()`: one stays usable for any number of whole blocks. */
function ecbEncryptor(key: Uint8Array): Cipheriv {
  const e = createCipheriv('aes-128-ecb', key, null)
  e.setAutoPadding(false)
  return e
}

function encryptorOf(key: Uint8Array, c: KeyCiphers): Cipheriv {
  return (c.enc ??= ecbEncryptor(key))
}

function decryptorOf(key: Uint8Array, c: KeyCiphers): Decipheriv {
  if (!c.dec) {
    c.dec = createDecipheriv('aes-128-ecb', key, null)
    c.dec.setAutoPadding(false)
  }
  return c.dec
}

/** Meter keys with ciphers kept (tests). */
export const keptKeys = (): number => kept.size

/** Forgets every kept key (tests). */
export function clearKeptKeys(): void {
  kept.clear()
  lastSweep = -Infinity
}

/**
 * AES-128-CBC decryption without padding. `keep`: the key is a meter's (its cipher is kept
 * where there is room); false for a key made for this telegram alone.
 */
export function aesCbcDecrypt(
  key: Uint8Array,
  iv: Uint8Array,
  data: Uint8Array,
  keep = true,
): Buffer {
  // Not whole blocks: the one-off cipher's final() refuses them, as it always did (a kept
  // ECB cipher would hold the rest back into the next telegram).
  const c = keep && data.length % 16 === 0 ? keptFor(key) : null
  if (!c) {
    const d = createDecipheriv('aes-128-cbc', key, iv)
    d.setAutoPadding(false)
    return Buffer.concat([d.update(data), d.final()])
  }
  // P[i] = D(C[i]) xor C[i-1], with C[-1] = iv.
  const p = decryptorOf(key, c).update(data)
  for (let i = 0; i < 16 && i < p.length; i++) p[i]! ^= iv[i]!
  for (let i = 16; i < p.length; i++) p[i]! ^= data[i - 16]!
  return p
}

/** AES-128-CTR with a 128-bit big-endian counter starting at `counter` (OpenSSL's). */
export function aesCtr(key: Uint8Array, counter: Uint8Array, data: Uint8Array): Buffer {
  const c = keptFor(key)
  if (!c) {
    const d = createDecipheriv('aes-128-ctr', key, counter)
    return Buffer.concat([d.update(data), d.final()])
  }
  if (data.length === 0) return Buffer.alloc(0)
  const blocks = Math.ceil(data.length / 16)
  const ctr = Buffer.alloc(blocks * 16)
  ctr.set(counter.subarray(0, 16))
  for (let b = 1; b < blocks; b++) {
    const o = b * 16
    ctr.copy(ctr, o, o - 16, o)
    // + 1 with carry from the last byte up.
    for (let i = o + 15; i >= o && ++ctr[i]! === 256; i--) ctr[i] = 0
  }
  const out = encryptorOf(key, c).update(ctr)
  for (let i = 0; i < data.length; i++) out[i]! ^= data[i]!
  return out.subarray(0, data.length)
}

function dbl(b: Buffer): Buffer {
  const o = Buffer.alloc(16)
  let carry = 0
  for (let i = 15; i >= 0; i--) {
    const v = (b[i]! << 1) | carry
    o[i] = v & 0xff
    carry = b[i]! >> 7
  }
  if (b[0]! & 0x80) o[15]! ^= 0x87
  return o
}

/**
 * AES-CMAC (RFC 4493). `keep`: the key is a meter's (its cipher and subkeys are kept where
 * there is room); false for a key made for this telegram alone.
 */
export function cmac(key: Uint8Array, msg: Uint8Array, keep = true): Buffer {
  const c = keep ? keptFor(key) : null
  let enc: Cipheriv
  let k1: Buffer
  let k2: Buffer
  if (c) {
    enc = encryptorOf(key, c)
    c.k1 ??= dbl(enc.update(ZERO))
    c.k2 ??= dbl(c.k1)
    k1 = c.k1
    k2 = c.k2
  } else {
    // One ECB cipher for the subkeys and the chain: cheaper than a second, CBC, cipher for
    // messages of a few blocks (mode 7's MAC: kept-key mode 7 72 k/s that way, 107 k/s so).
    enc = ecbEncryptor(key)
    k1 = dbl(enc.update(ZERO))
    k2 = dbl(k1)
  }
  const n = msg.length === 0 ? 1 : Math.ceil(msg.length / 16)
  const complete = msg.length > 0 && msg.length % 16 === 0
  const m = Buffer.alloc(n * 16)
  m.set(msg)
  const last = (n - 1) * 16
  if (complete) {
    for (let i = 0; i < 16; i++) m[last + i]! ^= k1[i]!
  } else {
    m[msg.length] = 0x80
    for (let i = 0; i < 16; i++) m[last + i]! ^= k2[i]!
  }
  // CBC-MAC block by block: each block's input is chained on the previous block's output.
  let x = enc.update(m.subarray(0, 16))
  for (let o = 16; o < m.length; o += 16) {
    for (let i = 0; i < 16; i++) m[o + i]! ^= x[i]!
    x = enc.update(m.subarray(o, o + 16))
  }
  return x
}

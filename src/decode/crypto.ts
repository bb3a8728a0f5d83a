// AES-128 for the decoder host, on node:crypto (AES-NI): CBC (modes 5 and 7),
// CTR (ELL) and CMAC (mode 7 key derivation and AFL MAC).
import { createCipheriv, createDecipheriv } from 'node:crypto'

const ZERO = Buffer.alloc(16)

export function aesCbcDecrypt(key: Uint8Array, iv: Uint8Array, data: Uint8Array): Buffer {
  const d = createDecipheriv('aes-128-cbc', key, iv)
  d.setAutoPadding(false)
  return Buffer.concat([d.update(data), d.final()])
}

export function aesCtr(key: Uint8Array, counter: Uint8Array, data: Uint8Array): Buffer {
  const d = createDecipheriv('aes-128-ctr', key, counter)
  return Buffer.concat([d.update(data), d.final()])
}

function aesBlock(key: Uint8Array, block: Uint8Array): Buffer {
  const c = createCipheriv('aes-128-ecb', key, null)
  c.setAutoPadding(false)
  return c.update(block)
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

/** AES-CMAC (RFC 4493). */
export function cmac(key: Uint8Array, msg: Uint8Array): Buffer {
  const L = aesBlock(key, ZERO)
  const k1 = dbl(L)
  const n = msg.length === 0 ? 1 : Math.ceil(msg.length / 16)
  const complete = msg.length > 0 && msg.length % 16 === 0
  const m = Buffer.alloc(n * 16)
  m.set(msg)
  const last = (n - 1) * 16
  if (complete) {
    for (let i = 0; i < 16; i++) m[last + i]! ^= k1[i]!
  } else {
    m[msg.length] = 0x80
    const k2 = dbl(k1)
    for (let i = 0; i < 16; i++) m[last + i]! ^= k2[i]!
  }
  const c = createCipheriv('aes-128-cbc', key, ZERO)
  c.setAutoPadding(false)
  const out = c.update(m)
  return out.subarray(out.length - 16)
}

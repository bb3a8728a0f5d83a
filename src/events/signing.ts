// Outbound signatures (api-v1.md "Signature verification"): HMAC-SHA256 over the decimal
// unix time, a dot and the exact body bytes, keyed with the signing secret's UTF-8 bytes
// (operator-api.md "Signatures"). Header: `t=<unix>,v1=<lowercase hex>`.
import crypto from 'node:crypto'

export function newSigningSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64url')}`
}

export function signatureDigest(secret: string, t: number | string, body: Buffer | string): string {
  return crypto
    .createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${t}.`)
    .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
    .digest('hex')
}

/** The X-Service-Signature value for `body` sent at unix second `t`. */
export function signatureHeader(secret: string, t: number, body: Buffer | string): string {
  return `t=${t},v1=${signatureDigest(secret, t, body)}`
}

/**
 * The receiver's side, exactly as the spec's algorithm: parse, recompute over the raw bytes,
 * compare in constant time, check the tolerance window both ways.
 */
export function verifySignature(
  header: string | undefined,
  body: Buffer,
  secret: string,
  nowS: number,
  toleranceS = 300,
): boolean {
  if (!header) return false
  let t: string | undefined
  let v1: string | undefined
  for (const part of header.split(',')) {
    const i = part.indexOf('=')
    if (i < 0) continue
    const k = part.slice(0, i).trim()
    const v = part.slice(i + 1).trim()
    if (k === 't') t = v
    else if (k === 'v1') v1 = v
  }
  if (!t || !v1 || !/^\d+$/.test(t)) return false
  const expected = Buffer.from(signatureDigest(secret, t, body), 'utf8')
  const given = Buffer.from(v1, 'utf8')
  if (expected.length !== given.length || !crypto.timingSafeEqual(expected, given)) return false
  return Math.abs(nowS - Number(t)) <= toleranceS
}

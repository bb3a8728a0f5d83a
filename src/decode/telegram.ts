// Host side of the telegram decoder: writes a telegram into the core (WASM or portable JS),
// drives it, and performs the AES steps with node:crypto. The decoder state it leaves becomes
// a TelegramOutcome in telegram-outcome.ts (sync) or the workers' result format (wire.ts).
import type { DecoderCore } from './core.js'
import { S, RC, E, REASONS } from './layout.js'
import { aesCbcDecrypt, aesCtr, cmac } from './crypto.js'
import { outcomeOf, type TelegramOutcome } from './telegram-outcome.js'

/**
 * Performs one crypto step. Returns the next core result code, or -1 when the
 * caller must stop with `rejected_undecodable` (reason in CTRL).
 */
export function cryptoStep(core: DecoderCore, key: Uint8Array): number {
  const { CTRL, F, IVB } = core
  const scheme = CTRL[S.SCHEME]!
  const off = CTRL[S.CIPH_OFF]!
  const len = CTRL[S.CIPH_LEN]!
  const predec = CTRL[S.PREDEC] === 1
  const orig = F.slice(off, off + len)
  if (key.length !== 16) {
    // an 8-byte (DES) key: every scheme the decoder asks the host for is AES-128
    CTRL[S.REASON] = E.KEY_DES
    return -1
  }
  if (scheme === 1 || scheme === 4) {
    F.set(aesCbcDecrypt(key, IVB.subarray(0, 16), orig), off)
  } else if (scheme === 3) {
    F.set(aesCtr(key, IVB.subarray(0, 16), orig), off)
  } else if (scheme === 2) {
    const kdf = Buffer.from(IVB.subarray(0, 16))
    const kenc = cmac(key, kdf)
    kdf[0] = 1
    const kmac = cmac(key, kdf)
    const mclOff = CTRL[S.MCL_OFF]!
    const ctrOff = CTRL[S.AFL_CTR_OFF]!
    const tpl = CTRL[S.MAC_DATA_OFF]!
    const end = CTRL[S.END]!
    const msg = new Uint8Array(5 + end - tpl)
    msg[0] = F[mclOff]!
    msg.set(F.subarray(ctrOff, ctrOff + 4), 1)
    msg.set(F.subarray(tpl, end), 5)
    const mac = cmac(kmac, msg, false)
    const macOff = CTRL[S.MAC_OFF]!
    const macLen = CTRL[S.MAC_LEN]!
    let same = macLen > 0
    for (let i = 0; i < macLen; i++) if (mac[i] !== F[macOff + i]) same = false
    if (!same) {
      if (predec) return core.resume(2)
      CTRL[S.REASON] = E.MAC
      return -1
    }
    F.set(aesCbcDecrypt(kenc, new Uint8Array(16), orig, false), off)
  } else {
    CTRL[S.REASON] = E.UNSUPPORTED_SEC
    return -1
  }
  const r = core.resume(1)
  if (
    r === RC.UNDECODABLE &&
    predec &&
    (CTRL[S.REASON] === E.WRONG_KEY || CTRL[S.REASON] === E.ELL_CRC)
  ) {
    // the bytes were plain already (predecrypted frame): accept them as sent
    F.set(orig, off)
    CTRL[S.SCHEME] = scheme
    CTRL[S.REASON] = 0
    return core.resume(2)
  }
  return r
}

/** Decodes the len ASCII hex characters already written to core.IN. Returns a core result code. */
export function runTelegram(core: DecoderCore, len: number, key: Uint8Array | null): number {
  let r = core.begin(len)
  for (let step = 0; r === RC.NEED_CRYPTO && step < 4; step++) {
    const { CTRL } = core
    if (key === null) {
      if (CTRL[S.PREDEC] === 1) r = core.resume(2)
      else return RC.UNCONFIGURED
    } else {
      r = cryptoStep(core, key)
      if (r < 0) return RC.UNDECODABLE
    }
  }
  if (r === RC.NEED_CRYPTO) {
    core.CTRL[S.REASON] = E.UNSUPPORTED_SEC
    return RC.UNDECODABLE
  }
  return r
}

const inBuffers = new WeakMap<Uint8Array, Buffer>()

/** Writes an ASCII hex string into core.IN; returns its length or -1 when too long. Non-ASCII becomes '?'. */
export function writeHex(core: DecoderCore, hex: string): number {
  const n = hex.length
  if (n > core.IN.length) return -1
  let b = inBuffers.get(core.IN)
  if (!b) {
    b = Buffer.from(core.IN.buffer, core.IN.byteOffset, core.IN.length)
    inBuffers.set(core.IN, b)
  }
  if (Buffer.byteLength(hex, 'utf8') !== n) hex = hex.replace(/[^\x00-\x7f]/g, '?')
  b.write(hex, 0, n, 'latin1')
  return n
}

export function parseKey(key: string | null): Uint8Array | null | 'bad' {
  if (key === null || key === undefined) return null
  // AES-128 keys (16 bytes); 8-byte keys are DES keys for security modes 2 and 3
  if (!/^(?:[0-9a-fA-F]{16}){1,2}$/.test(key)) return 'bad'
  return Buffer.from(key, 'hex')
}

/** One telegram, synchronously, on a given core (tests, bench, worker). */
export function decodeTelegramSync(
  core: DecoderCore,
  hex: string,
  key: string | null,
): TelegramOutcome {
  const k = parseKey(key)
  if (k === 'bad')
    return {
      status: 'rejected_undecodable',
      reason: 'key must be 32 hex digits (or 16 for a DES key)',
    }
  const len = writeHex(core, hex)
  if (len < 0) return { status: 'invalid', reason: REASONS[E.TOO_LONG]! }
  return outcomeOf(core, runTelegram(core, len, k), hex)
}

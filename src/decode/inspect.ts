// Cheap synchronous look at a telegram on the main thread (batch validation): the WASM
// decoder's own frame, link, ELL, AFL and TPL layers run once, without a key, so the batch
// is checked by the very parser that decodes it later. A structural fault (hex, lengths,
// CRCs, truncated headers) makes the batch a 422 naming the field; anything the layers
// above find (unsupported CI, records, compact formats, keys) is the decoder's per-reading
// verdict and leaves the inspection ok. The identifier is the last address seen (DLL, then
// ELL 8E/8F, then long TPL 72). A telegram that needs no key also gets its repeat
// fingerprint here (the bytes are those the decoder would hash), so a repeat heard through
// another gateway is known before it is decoded (ingest/prepare.ts).
import { loadWasmCore, type DecoderCore } from './core.js'
import { E, RC, REASONS, S } from './layout.js'
import { writeHex } from './telegram.js'
import { fingerprintOf, identifierOf } from './telegram-identity.js'
import { manufacturer } from './telegram-text.js'

export type TelegramInspection =
  | {
      ok: true
      identifier: string
      manufacturer: string
      encrypted: boolean
      /** fingerprintOf when the frame needs no key (plain or decrypted by the gateway), else null. */
      fingerprint: number | null
    }
  | { ok: false; error: string }

/** Faults of the frame itself: the batch is refused (422) rather than the reading rejected. */
const STRUCTURAL = new Set<number>([
  E.NOT_HEX,
  E.ODD_HEX,
  E.TOO_SHORT,
  E.LEN_MISMATCH,
  E.TOO_LONG,
  E.DLL_CRC,
  E.WIRED_CS,
  E.WIRED_FRAME,
  E.TRUNCATED_HEADER,
  E.AFL,
  E.LEN_SHORT,
  E.LEN_TRAILING,
])

let core: DecoderCore | null = null

export function inspectTelegram(hex: string): TelegramInspection {
  if (typeof hex !== 'string' || hex.length === 0)
    return { ok: false, error: 'must be a non-empty hex string' }
  core ??= loadWasmCore()
  const len = writeHex(core, hex)
  if (len < 0) return { ok: false, error: REASONS[E.TOO_LONG]! }
  const r = core.inspect(len)
  const reason = core.CTRL[S.REASON]!
  if (r === RC.INVALID && STRUCTURAL.has(reason)) return { ok: false, error: REASONS[reason]! }
  // Encrypted unless the payload already reads as plain (a gateway decrypted it): the
  // decoder then takes the bytes as they are, and hashes these.
  const encrypted = r === RC.NEED_CRYPTO && core.CTRL[S.PREDEC] !== 1
  return {
    ok: true,
    identifier: identifierOf(core),
    manufacturer: core.CTRL[S.HAS_ID] ? manufacturer(core.CTRL[S.ID_M]!) : '',
    encrypted,
    fingerprint: r === RC.OK || (r === RC.NEED_CRYPTO && !encrypted) ? fingerprintOf(core) : null,
  }
}

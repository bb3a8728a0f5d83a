// Which meter sent a telegram and which radio telegram it was, read off the decoder's state:
// the same after a full decode and after the main thread's inspection (inspect.ts), so a
// repeat heard through several gateways is known before it is decoded.
import type { DecoderCore } from './core.js'
import { S } from './layout.js'
import { printedId } from './telegram-text.js'

export function identifierOf(core: DecoderCore): string {
  const { CTRL } = core
  if (CTRL[S.HAS_ID]) return printedId(CTRL[S.ID]!)
  return 'p' + CTRL[S.WIRED_ADDR]
}

/**
 * FNV-1a (32 bits) of the telegram's bytes after the link header (from the first CI to the
 * end the L-field gives, block CRCs stripped, decrypted): the access number and the
 * application bytes. Gateways that hear one radio telegram hand over these bytes alike,
 * whatever CRCs or trailing bytes they add (ingest: repeats within a window are duplicates).
 */
export function fingerprintOf(core: DecoderCore): number {
  const { CTRL, F } = core
  const start = CTRL[S.FRAME] === 2 ? 6 : 10
  const end = Math.min(CTRL[S.FRAME_END]!, F.length)
  let h = 0x811c9dc5
  for (let i = start; i < end; i++) h = Math.imul(h ^ F[i]!, 0x01000193)
  return h >>> 0
}

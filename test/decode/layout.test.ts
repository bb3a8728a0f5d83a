// The host reads the decoder's memory by the numbers in src/decode/state.generated.ts, which
// the build generates from asm/state.ts. A stale committed copy, or a reason code without a
// text, would make the host misread outcomes without any other test noticing.
import { readFileSync } from 'node:fs'
import t from 'tap'
// @ts-expect-error plain ESM build script without types
import { generateLayout, generatedPath, statePath } from '../../asm/gen-layout.mjs'
import { E, REASONS, S } from '../../src/decode/layout.js'

t.test('state.generated.ts is what asm/state.ts generates', async (t) => {
  const fresh = (generateLayout as (s: string) => string)(readFileSync(statePath, 'utf8'))
  t.equal(readFileSync(generatedPath as string, 'utf8'), fresh, 'run npm run build:asm')
})

t.test('every reason code has a text', async (t) => {
  for (const [name, code] of Object.entries(E)) {
    if (name === 'SEC_MODE' || name === 'NOT_DECODED') continue
    const text = REASONS[code]
    t.ok(text && text !== 'not decoded', `E.${name} = ${code}: ${text}`)
  }
  t.equal(REASONS[E.SEC_MODE + 5], 'unsupported security mode 5')
})

t.test('the generated slots are the ones the decoder writes', async (t) => {
  const src = readFileSync(statePath as string, 'utf8')
  t.match(src, new RegExp(`export const S_REASON: i32 = ${S.REASON};`))
  t.match(src, new RegExp(`export const S_FMT_NEW: i32 = ${S.FMT_NEW};`))
})

// docs/errors.md and the one error table (src/errors.ts) say the same thing: every code with
// its status and default message, no more, no fewer.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { ErrorTable } from '../src/errors.js'

const doc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8')
const rows = new Map<string, { status: number; message: string }>()
for (const line of doc.split('\n')) {
  const m = /^\| `(\w+)` \| (\d{3}) \| ([^|]+?) \| /.exec(line)
  if (m) rows.set(m[1]!, { status: Number(m[2]), message: m[3]! })
}

t.test('every code of the table is documented with its status and message', async (t) => {
  for (const [code, e] of Object.entries(ErrorTable)) t.same(rows.get(code), e, code)
})

t.test('the page documents no code the table lacks', async (t) => {
  t.same(
    [...rows.keys()].filter((c) => !(c in ErrorTable)),
    [],
  )
  t.ok(rows.size >= 10, `${rows.size} codes documented`)
})

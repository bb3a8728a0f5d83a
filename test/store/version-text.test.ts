// versionText writes a row version as String(v) does, whatever the digits it keeps from the
// version before.
import t from 'tap'
import fc from 'fast-check'
import { versionText } from '../../src/store/sql.js'

t.test('versions read as String(v), in any order', async (t) => {
  const now = Date.now() * 1000
  const edges = [0, 1, 999_999, 1_000_000, 1_000_001, 1_999_999, now, now + 1, now - 1]
  edges.push(Math.floor(now / 1e6) * 1e6, Math.floor(now / 1e6) * 1e6 - 1, 2 ** 53 - 1)
  t.same(edges.map(versionText), edges.map(String), 'edges')
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.maxSafeNat(), fc.integer({ min: now - 5e6, max: now + 5e6 })), {
        minLength: 1,
        maxLength: 50,
      }),
      (vs) => vs.every((v) => versionText(v) === String(v)),
    ),
    { numRuns: 500 },
  )
  t.pass('property held')
})

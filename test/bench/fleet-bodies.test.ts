// The `fleet` bench bodies: each request names the next `batch` of a lane's meters, so every
// meter reports once per meters / batch requests, its readings `stepMs` apart and rising.
import t from 'tap'
import { bodyFactory, fleetMeter } from '../../bench/lib/bodies.js'

interface Item {
  meter: string
  value: number
  recorded_at: string
}

t.test('a lane rotates through its meters, each reading a step after the last', async (t) => {
  const start = Date.UTC(2026, 0, 1)
  const f = bodyFactory({ kind: 'fleet', batch: 4, meters: 10, startMs: start, stepMs: 900_000 })
  t.equal(f.readings, 4)
  const seen = new Map<string, Item[]>()
  for (let seq = 0; seq < 10; seq++) {
    const items = (JSON.parse(f.make(3, seq)) as { readings: Item[] }).readings
    t.equal(new Set(items.map((i) => i.meter)).size, 4, `request ${seq}: 4 different meters`)
    for (const i of items) seen.set(i.meter, [...(seen.get(i.meter) ?? []), i])
  }
  // 40 readings over 10 meters: 4 each, in order, 15 minutes apart, the value rising.
  t.same([...seen.keys()].sort(), Array.from({ length: 10 }, (_, i) => fleetMeter(3, i)).sort())
  for (const [meter, items] of seen) {
    t.same(
      items.map((i) => Date.parse(i.recorded_at) - start),
      [0, 1, 2, 3].map((k) => k * 900_000),
      `${meter}: one reading per round`,
    )
    t.ok(
      items.every((i, k) => k === 0 || i.value > items[k - 1]!.value),
      `${meter}: rising`,
    )
  }
})

// Delivery rows are written as hand-made JSONEachRow lines (src/store/events.ts): whatever
// the body, error text or nulls hold, a delivery reads back exactly as it was saved.
import t from 'tap'
import { EventRepo, type Delivery } from '../../src/store/events.js'
import { openTmpStore } from '../helpers/store.js'

const tmp = await openTmpStore()
t.teardown(() => tmp.close())
const repo = new EventRepo(tmp.store)

const base: Delivery = {
  id: '0190a0b0-0000-7000-8000-000000000001',
  workspace_id: 7,
  subscription_id: 3,
  event: 'meter.created',
  body: JSON.stringify({ data: { meter: 'Zähler "A"\n', note: '€ 🔥 \\ </script>' } }),
  status: 'pending',
  attempts: 0,
  last_status_code: null,
  last_error: null,
  next_attempt_at: Date.UTC(2026, 10, 25, 23, 0, 0, 123),
  exhausted: false,
  created_at: Date.UTC(2026, 10, 25, 22, 59, 59, 5),
  version: 0,
}

t.test('a new delivery reads back as saved', async (t) => {
  await repo.saveDeliveries([{ ...base }])
  const d = await repo.getDelivery(base.id, base.workspace_id)
  t.same({ ...d, version: 0 }, base)
})

t.test('an attempt result with an error text and no next attempt', async (t) => {
  const next: Delivery = {
    ...base,
    status: 'failed',
    attempts: 5,
    last_status_code: 502,
    last_error: 'HTTP 502: "bad gateway"\r\n\tü',
    next_attempt_at: null,
    exhausted: true,
  }
  await repo.saveDeliveries([next], 'result')
  const d = await repo.getDelivery(base.id, base.workspace_id)
  t.same({ ...d, version: 0 }, { ...next, version: 0 })
})

// Every bad input path of POST /reportData: 422 {message, errors} with the field key, and
// nothing of the batch written.
import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer({ MAX_BATCH_ITEMS: '50' })
t.teardown(() => s.close())
const { token, workspaceId } = await s.tenant()
const now = Date.now()
const at = (min = 0) => new Date(now - 3600_000 + min * 60_000).toISOString()
const good = (meter = 'v-ok', min = 0) => ({
  meter,
  kind: 'saldo',
  value: 1,
  unit: 'kwh',
  recorded_at: at(min),
})

await s.admin('POST', `/workspaces/${workspaceId}/profiles`, {
  key: 'acme_v1',
  name: 'Acme V1',
  kind: 'saldo',
  unit: 'm3',
  status_map: { LEAK: 'leak' },
})
await s.admin('POST', `/workspaces/${workspaceId}/profiles`, {
  key: 'acme_bin',
  name: 'Acme binary',
  kind: 'saldo',
  unit: 'm3',
  decoder: {
    encoding: 'hex',
    fields: [
      { name: 'value', type: 'u32', scale: 0.001 },
      { name: 'status', type: 'flags8', flags: ['LEAK'] },
    ],
  },
})

async function counts() {
  const [r] = await s.app.parts.store.sql.query<any>(
    `SELECT (SELECT count() FROM readings) AS readings, (SELECT count() FROM meters) AS meters`,
  )
  return { readings: Number(r.readings), meters: Number(r.meters) }
}

const cases: [string, unknown, string][] = [
  ['readings missing', {}, 'readings'],
  ['readings not an array', { readings: 'x' }, 'readings'],
  ['readings empty', { readings: [] }, 'readings'],
  [
    'batch over the maximum',
    { readings: Array.from({ length: 51 }, (_, i) => good(`m${i}`)) },
    'readings',
  ],
  ['item not an object', { readings: [good(), 5] }, 'readings.1'],
  [
    'meter missing',
    { readings: [good(), { kind: 'saldo', value: 1, unit: 'kwh', recorded_at: at() }] },
    'readings.1.meter',
  ],
  ['bad kind', { readings: [{ ...good(), kind: 'total' }] }, 'readings.0.kind'],
  ['value not a number', { readings: [good(), { ...good('x'), value: '12' }] }, 'readings.1.value'],
  ['unit unknown', { readings: [{ ...good(), unit: 'gallon' }] }, 'readings.0.unit'],
  [
    'recorded_at not ISO 8601',
    { readings: [{ ...good(), recorded_at: 'yesterday' }] },
    'readings.0.recorded_at',
  ],
  [
    'recorded_at impossible date',
    { readings: [{ ...good(), recorded_at: '2026-02-30T10:00:00Z' }] },
    'readings.0.recorded_at',
  ],
  [
    'recorded_at over 5 minutes ahead',
    { readings: [{ ...good(), recorded_at: new Date(Date.now() + 6 * 60_000).toISOString() }] },
    'readings.0.recorded_at',
  ],
  ['unknown field', { readings: [{ ...good(), colour: 'red' }] }, 'readings.0.colour'],
  [
    'payload on the generic profile',
    { readings: [{ meter: 'g', payload: { value: 1 }, recorded_at: at() }] },
    'readings.0.payload',
  ],
  ['unknown profile', { readings: [{ ...good(), profile: 'nope' }] }, 'readings.0.profile'],
  [
    'pulse payload empty',
    { readings: [{ meter: 'p', profile: 'pulse_counter', payload: {}, recorded_at: at() }] },
    'readings.0.payload',
  ],
  [
    'pulse payload wrong type',
    {
      readings: [
        { meter: 'p', profile: 'pulse_counter', payload: { pulses: 'a' }, recorded_at: at() },
      ],
    },
    'readings.0.payload.pulses',
  ],
  [
    'telegram not hex',
    { readings: [{ profile: 'wmbus_oms', payload: { telegram: 'ZZZZ' }, recorded_at: at() }] },
    'readings.0.payload.telegram',
  ],
  [
    'telegram lengths do not add up',
    {
      readings: [
        {
          profile: 'wmbus_oms',
          payload: { telegram: '2E4493157856341233037A2A0000002F2F' },
          recorded_at: at(),
        },
      ],
    },
    'readings.0.payload.telegram',
  ],
  [
    'object payload value missing',
    { readings: [{ meter: 'a', profile: 'acme_v1', payload: { status: [] }, recorded_at: at() }] },
    'readings.0.payload.value',
  ],
  [
    'object payload status not strings',
    {
      readings: [
        { meter: 'a', profile: 'acme_v1', payload: { value: 1, status: [1] }, recorded_at: at() },
      ],
    },
    'readings.0.payload.status.0',
  ],
  [
    'binary frame of the wrong length',
    { readings: [{ meter: 'b', profile: 'acme_bin', payload: '0102', recorded_at: at() }] },
    'readings.0.payload',
  ],
  [
    'binary frame not a string',
    { readings: [{ meter: 'b', profile: 'acme_bin', payload: { value: 1 }, recorded_at: at() }] },
    'readings.0.payload',
  ],
  [
    'payload missing for a profile',
    { readings: [{ ...good('pp'), profile: 'pulse_counter' }] },
    'readings.0.payload',
  ],
]

for (const [name, body, key] of cases) {
  t.test(`${name} → 422 naming ${key}, nothing written`, async (t) => {
    const before = await counts()
    const r = await s.call('POST', '/api/v1/reportData', { token, body })
    t.equal(r.status, 422, r.text)
    t.type(r.body.message, 'string')
    t.ok(r.body.errors?.[key], `errors has ${key}: ${JSON.stringify(r.body.errors)}`)
    t.same(await counts(), before, 'no reading and no meter written')
  })
}

t.test('a body that is not JSON is 422 naming body', async (t) => {
  const r = await s.call('POST', '/api/v1/reportData', { token, raw: '{"readings": [' })
  t.equal(r.status, 422)
  t.ok(r.body.errors.body)
})

t.test('a valid batch after all that is stored', async (t) => {
  const r = await s.call('POST', '/api/v1/reportData', {
    token,
    body: { readings: [good('final', 1)] },
  })
  t.equal(r.status, 201, r.text)
})

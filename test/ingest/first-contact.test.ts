// A first contact of more meters at once than the 100,000 a meter repository remembers by
// default: every new meter's first actor still starts with an empty window and asks the
// store for no history (the service remembers as many new meters as it keeps actors,
// app.ts). Before, the requests queued behind one creation made meters past that number
// forgotten, and their actors loaded windows they did not have: 280,000 meters' first
// reports in the `fleet` bench took ~9 s, 5–6 s since.
import t from 'tap'
import { startTestServer } from '../helpers/server.js'

const REQUESTS = 12
const PER_REQUEST = 10_000 // MAX_BATCH_ITEMS

const s = await startTestServer()
t.teardown(() => s.close())
const tenant = await s.tenant({ workspace: { provision_cap_per_hour: 10_000_000 } })
const at = new Date(Date.now() - 3_600_000).toISOString()

t.test(
  `${REQUESTS * PER_REQUEST} new meters in concurrent requests: no history asked`,
  async (t) => {
    const history = s.app.parts.actors.env.history as unknown as { queries: { windows: number } }
    const before = history.queries.windows
    const answers = await Promise.all(
      Array.from({ length: REQUESTS }, (_, r) =>
        s.call('POST', '/api/v1/reportData', {
          token: tenant.token,
          body: {
            readings: Array.from({ length: PER_REQUEST }, (_, i) => ({
              meter: `fc-${r}-${i}`,
              kind: 'saldo',
              value: i,
              unit: 'kwh',
              recorded_at: at,
            })),
          },
        }),
      ),
    )
    t.same(
      answers.map((a) => [a.status, (a.body as { accepted: number }).accepted]),
      Array.from({ length: REQUESTS }, () => [201, PER_REQUEST]),
      'every reading created',
    )
    t.equal(history.queries.windows - before, 0, 'no window loaded from the store')
  },
)

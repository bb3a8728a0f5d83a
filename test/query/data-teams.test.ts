// docs/data-teams.md is executable: its three example queries run against a small data set
// and give the documented answers, and the SQL of GET /admin/v1/workspaces/{ws}/sql-access
// parses and grants meters without wmbus_key. Both store modes.
import fs from 'node:fs'
import t from 'tap'
import { insertReadings, insertStatus } from './helpers.js'
import { startTestServer } from '../helpers/server.js'
import { METER_COLUMNS } from '../../src/store/sql-access.js'

const s = await startTestServer()
t.teardown(() => s.close())
const { token, workspaceId: ws } = await s.tenant()
const sql = s.app.parts.store.sql
const doc = fs.readFileSync(new URL('../../docs/data-teams.md', import.meta.url), 'utf8')
const examples = [
  ...doc.slice(doc.indexOf('## Example queries')).matchAll(/```sql\n([\s\S]*?)```/g),
].map((m) => m[1]!.replace(/workspace_id = 42/g, `workspace_id = ${ws}`))

const post = async (path: string, body: Record<string, unknown>) => {
  const r = await s.call('POST', path, { token, body })
  if (r.status !== 201) throw new Error(r.text)
  return r.body.data.id as number
}
const north = await post('/api/v1/meterGroups', { name: 'North' })
const m1 = await post('/api/v1/meters', {
  meter_identifier: 'm1',
  group_id: north,
  expected_interval_minutes: 60,
})
const m2 = await post('/api/v1/meters', { meter_identifier: 'm2' })
const at = (d: number, h: number) => Date.UTC(2026, 0, d, h)
await insertReadings(s, ws, [
  { meter: m1, at: at(1, 0), value: 1, version: 1 },
  { meter: m1, at: at(1, 0), value: 5, version: 2 }, // re-versioned: FINAL keeps 5
  { meter: m1, at: at(1, 1), value: 1.5 },
  { meter: m1, at: at(1, 4), value: 2 },
  { meter: m2, at: at(1, 10), value: 2 },
  { meter: m2, at: at(2, 10), value: 3 },
])
await insertStatus(s, ws, m1, '2026-01-01T05:00:00Z', ['LEAK'], ['leak'])
await insertStatus(s, ws, m1, '2026-01-02T05:00:00Z', [], [])

t.equal(examples.length, 3, 'three example queries in the doc')

t.test('daily consumption per group', async (t) => {
  const rows = await sql.query<any>(examples[0]!)
  t.same(
    rows.map((r) => [r.day, r.group_name, r.unit, Number(r.consumption)]),
    [
      ['2026-01-01', 'North', 'kwh', 8.5],
      ['2026-01-01', 'Ungrouped meters', 'kwh', 2],
      ['2026-01-02', 'Ungrouped meters', 'kwh', 3],
    ],
  )
})

t.test('meters with gaps', async (t) => {
  const rows = await sql.query<any>(examples[1]!)
  t.same(
    rows.map((r) => [r.meter_identifier, r.gap_from, r.gap_to, Number(r.minutes)]),
    [['m1', '2026-01-01 01:00:00.000', '2026-01-01 04:00:00.000', 180]],
  )
})

t.test('status history', async (t) => {
  const rows = await sql.query<any>(examples[2]!)
  t.same(
    rows.map((r) => [r.meter_identifier, r.statuses, r.appeared, r.cleared]),
    [
      ['m1', ['leak'], ['leak'], []],
      ['m1', [], [], ['leak']],
    ],
  )
})

t.test('sql-access: statements that parse, meters without wmbus_key', async (t) => {
  const r = await s.admin('GET', `/workspaces/${ws}/sql-access?user=analyst_1`)
  const d = r.data
  t.equal(d.user, 'analyst_1')
  t.ok(d.password.length >= 20, 'a fresh password')
  t.ok(d.statements.some((x: string) => x.includes(`USING workspace_id = ${ws} TO`)))
  t.notOk(d.statements.join('\n').includes('wmbus_key'))
  for (const st of d.statements) await sql.query(`EXPLAIN AST ${st}`)
  t.pass('every statement parses')
  const cols = (await sql.query<{ name: string }>('DESCRIBE TABLE meters')).map((c) => c.name)
  t.same(
    METER_COLUMNS,
    cols.filter((c) => c !== 'wmbus_key'),
    'all meter columns but the key',
  )
  const bad = await s.call('GET', `/admin/v1/workspaces/${ws}/sql-access?user=x;drop`, {
    token: s.adminToken,
  })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors.user)
})

t.test('the statements shown in the doc are what the generator writes', async (t) => {
  const { sqlAccessStatements } = await import('../../src/store/sql-access.js')
  const section = doc.slice(doc.indexOf('## A read-only user per workspace'))
  const shown = /```sql\n([\s\S]*?)```/.exec(section)![1]!.trim()
  const generated = sqlAccessStatements({
    workspaceId: 42,
    database: 'meterflow',
    user: 'meterflow_ws_42',
    password: '<password>',
  })
  t.equal(shown, generated.map((x) => `${x};`).join('\n'))
})

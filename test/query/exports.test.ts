// Exports of GET /api/v1/readings (docs/query.md "Exports"): CSV, NDJSON and Parquet by
// `format=` or `Accept`, for raw rows, aggregates and derived consumption. Every test parses
// the output and compares it with the JSON answer of the same query: same rows, same field
// names, same values (CSV: text; Parquet: read back with chDB, instants as timestamps).
// Large exports arrive in many chunks (streamed, chunked transfer). Both store modes.
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { Session } from 'chdb'
import t, { type Test as Tap } from 'tap'
import { insertReadings, type R } from './helpers.js'
import { clusterMode } from '../helpers/clickhouse.js'
import { startTestServer } from '../helpers/server.js'

const s = await startTestServer()
t.teardown(() => s.close())
const { token, workspaceId: ws } = await s.tenant()
const T0 = Date.UTC(2026, 0, 1)
const H = 3600_000
const iso = (ms: number) => new Date(ms).toISOString()
const create = async (body: Record<string, unknown>) => {
  const r = await s.call('POST', '/api/v1/meters', { token, body })
  if (r.status !== 201) throw new Error(r.text)
  return r.body.data.id as number
}
const water = await create({ meter_identifier: 'water "1", cellar', unit: 'm3' })
const power = await create({ meter_identifier: 'power-1', unit: 'kwh' })
await s.call('PATCH', `/api/v1/meters/${water}`, { token, body: { display_unit: 'l' } })
const rows: R[] = []
for (let h = 0; h < 30; h++) {
  rows.push({
    meter: water,
    kind: 'saldo',
    at: T0 + h * H + 123,
    value: 1.1 + h * 0.25,
    unit: 'm3',
    canonicalUnit: 'm3',
    flags: h === 7 ? ['implausible_rate', 'saldo_mismatch'] : [],
  })
  rows.push({ meter: power, kind: 'consumption', at: T0 + h * H, value: h / 10 })
}
rows.push({
  meter: power,
  kind: 'consumption',
  at: T0 + 31 * H,
  value: 5,
  unit: 'wh',
  canonical: null,
  canonicalUnit: null,
})
await insertReadings(s, ws, rows)
const RANGE = `from=${iso(T0 - H)}&to=${iso(T0 + 40 * H)}`

/** GET with headers; the body as bytes and the number of chunks it came in. */
function fetchRaw(q: string, headers: Record<string, string> = {}) {
  return new Promise<{
    status: number
    headers: http.IncomingHttpHeaders
    body: Buffer
    chunks: number
  }>((resolve, reject) => {
    const req = http.request(
      `${s.url}/api/v1/readings?${q}`,
      { headers: { authorization: `Bearer ${token}`, ...headers }, agent: false },
      (res) => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: Buffer.concat(parts),
            chunks: parts.length,
          }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end()
  })
}
const jsonData = async (q: string) => {
  const r = await s.call('GET', `/api/v1/readings?${q}&per_page=1000`, { token })
  if (r.status !== 200) throw new Error(r.text)
  return r.body.data as Record<string, unknown>[]
}

/**
 * Rows equal, floating-point numbers within 1e-12 relative: ClickHouse may add a bucket's
 * values in another order than the JSON answer's query did (last-digit differences).
 */
function sameRows(t: Tap, actual: unknown[], expected: unknown[], msg: string) {
  const close = (a: unknown, b: unknown): boolean => {
    if (typeof a === 'number' && typeof b === 'number')
      return a === b || Math.abs(a - b) <= 1e-12 * Math.max(Math.abs(a), Math.abs(b))
    if (typeof a === 'string' && typeof b === 'string' && a !== b && /^-?[\d.e+-]+$/.test(a))
      return close(Number(a), Number(b))
    if (Array.isArray(a) && Array.isArray(b))
      return a.length === b.length && a.every((x, i) => close(x, b[i]))
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      const ka = Object.keys(a)
      return (
        JSON.stringify(ka) === JSON.stringify(Object.keys(b)) &&
        ka.every((k) => close((a as any)[k], (b as any)[k]))
      )
    }
    return a === b
  }
  if (close(actual, expected)) t.pass(msg)
  else t.same(actual, expected, msg)
}

/** RFC 4180: quoted fields, doubled quotes, commas and newlines inside quotes. */
function parseCsv(text: string): string[][] {
  const out: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  const endField = () => {
    row.push(field)
    field = ''
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (c === '"') quoted = false
      else field += c
    } else if (c === '"') quoted = true
    else if (c === ',') endField()
    else if (c === '\n') {
      endField()
      out.push(row)
      row = []
    } else field += c
  }
  if (field || row.length) {
    endField()
    out.push(row)
  }
  return out
}
/** A JSON row as CSV writes it: null empty, arrays comma-joined, booleans true/false. */
const asCsv = (v: unknown) => (v === null ? '' : Array.isArray(v) ? v.join(',') : String(v))

// Parquet is read back with chDB: the app's own engine in embedded mode (one data directory
// per process), a session of the test's own when the app stores in a ClickHouse server.
let own: Session | null = null
t.teardown(() => own?.close())
async function chdbQuery(sql: string): Promise<string> {
  if (!clusterMode)
    return (await s.app.parts.store.sql.query<Record<string, unknown>>(sql))
      .map((r) => JSON.stringify(r))
      .join('\n')
  own ??= new Session()
  return (await own.queryAsync(sql, { format: 'JSONEachRow' })).text()
}
async function readParquet(bytes: Buffer) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-parquet-'))
  const file = path.join(dir, 'x.parquet')
  fs.writeFileSync(file, bytes)
  try {
    const cols = (await chdbQuery(`DESCRIBE file('${file}', Parquet)`))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { name: string; type: string })
    const data = await chdbQuery(
      `SELECT * FROM file('${file}', Parquet) SETTINGS output_format_json_quote_64bit_integers = 0`,
    )
    return {
      cols,
      rows: data.trim()
        ? data
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l))
        : [],
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const CASES: [string, string][] = [
  ['raw', RANGE],
  ['raw with tz', `${RANGE}&tz=Europe/Berlin`],
  ['one meter, one kind', `${RANGE}&meter_id=${power}&kind=consumption`],
  ['hourly', `${RANGE}&aggregate=hourly`],
  ['daily in a zone', `${RANGE}&aggregate=daily&tz=America/New_York`],
  ['derived', `${RANGE}&meter_id=${water}&derive=consumption`],
  [
    'derived, interpolated, tz',
    `${RANGE}&meter_id=${water}&derive=consumption&interpolate=linear&tz=Asia/Kolkata`,
  ],
]

t.test('NDJSON rows are the JSON rows, field for field', async (t) => {
  for (const [name, q] of CASES) {
    const json = await jsonData(q)
    t.ok(json.length > 0, `${name}: there are rows`)
    const r = await fetchRaw(`${q}&format=ndjson`)
    t.equal(r.status, 200, `${name}: ${r.body.toString().slice(0, 300)}`)
    t.equal(r.headers['content-type'], 'application/x-ndjson')
    const lines = r.body
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    sameRows(t, lines, json, `${name}: same rows, same field order`)
  }
})

t.test('CSV: a header of the JSON field names, then the rows', async (t) => {
  for (const [name, q] of CASES) {
    const json = await jsonData(q)
    const r = await fetchRaw(q, { accept: 'text/csv' })
    t.equal(r.status, 200, name)
    t.equal(r.headers['content-type'], 'text/csv; charset=utf-8')
    t.match(r.headers['content-disposition'], /^attachment; filename="readings-\w+\.csv"$/)
    const [header, ...body] = parseCsv(r.body.toString())
    t.same(header, Object.keys(json[0]!), `${name}: header`)
    sameRows(
      t,
      body,
      json.map((row) => Object.values(row).map(asCsv)),
      `${name}: rows`,
    )
  }
  const [, ...body] = parseCsv(
    (await fetchRaw(`${RANGE}&meter_id=${water}&format=csv`)).body.toString(),
  )
  t.equal(body[0]![1], 'water "1", cellar', 'quotes and commas survive')
  t.equal(body[7]![9], 'implausible_rate,saldo_mismatch', 'flags joined with commas')
})

t.test('Parquet: read back, the JSON rows with instants as UTC timestamps', async (t) => {
  for (const [name, q] of CASES) {
    const json = await jsonData(q)
    const r = await fetchRaw(q, { accept: 'application/vnd.apache.parquet' })
    t.equal(r.status, 200, name)
    t.equal(r.headers['content-type'], 'application/vnd.apache.parquet')
    t.equal(r.body.subarray(0, 4).toString(), 'PAR1', `${name}: a Parquet file`)
    const pq = await readParquet(r.body)
    t.same(
      pq.cols.map((c) => c.name),
      Object.keys(json[0]!),
      `${name}: columns`,
    )
    const instants = ['recorded_at', 'period_start', 'period_end']
    for (const c of pq.cols.filter((c) => instants.includes(c.name)))
      t.match(c.type, /DateTime64\(3, 'UTC'\)/, `${name}: ${c.name} is a UTC timestamp`)
    const back = pq.rows.map((row: Record<string, unknown>) => {
      const o: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(row))
        o[k] = instants.includes(k)
          ? iso(Date.parse(String(v).replace(' ', 'T') + 'Z'))
          : k === 'quality_flags'
            ? (v as string[]).length
              ? v
              : null
            : v
      return o
    })
    sameRows(t, back, json, `${name}: same rows`)
  }
})

t.test('negotiation and refusals', async (t) => {
  t.equal(
    (await fetchRaw(RANGE, { accept: 'application/json' })).headers['content-type'],
    'application/json',
  )
  t.equal(
    (await fetchRaw(`${RANGE}&format=json`, { accept: 'text/csv' })).headers['content-type'],
    'application/json',
    'format= wins over Accept',
  )
  t.equal(
    (await fetchRaw(RANGE, { accept: 'application/x-ndjson;q=0.9, */*' })).headers['content-type'],
    'application/x-ndjson',
  )
  const bad = await s.call('GET', `/api/v1/readings?${RANGE}&format=xml`, { token })
  t.equal(bad.status, 422)
  t.ok(bad.body.errors.format)
  const paged = await s.call('GET', `/api/v1/readings?${RANGE}&format=csv&page=2`, { token })
  t.equal(paged.status, 422)
  t.ok(paged.body.errors.page, 'paging does not apply to exports')
  const long = await s.call(
    'GET',
    `/api/v1/readings?from=2024-01-01T00:00:00Z&to=2025-06-01T00:00:00Z&format=csv`,
    { token },
  )
  t.equal(long.status, 422, 'the 366-day cap holds for exports')
  const anon = await s.call('GET', `/api/v1/readings?${RANGE}&format=csv`)
  t.equal(anon.status, 401)
  const other = await s.tenant()
  const empty = await fetchRaw(`${RANGE}&format=csv`, { authorization: `Bearer ${other.token}` })
  t.equal(empty.status, 200)
  t.same(parseCsv(empty.body.toString()).slice(1), [], 'another tenant sees none of these rows')
  const emptyDaily = await fetchRaw(`${RANGE}&aggregate=daily&format=csv`, {
    authorization: `Bearer ${other.token}`,
  })
  const [header, ...rest] = parseCsv(emptyDaily.body.toString())
  t.same(rest, [])
  t.same(
    header,
    Object.keys((await jsonData(`${RANGE}&aggregate=daily`))[0]!),
    'the aggregate header',
  )
})

t.test('a large export arrives streamed, in many chunks', async (t) => {
  const big = await create({ meter_identifier: 'big', unit: 'kwh' })
  const N = 60_000
  for (let i = 0; i < N; i += 20_000)
    await insertReadings(
      s,
      ws,
      Array.from({ length: 20_000 }, (_, j) => ({
        meter: big,
        at: T0 + (i + j) * 60_000,
        value: i + j,
      })),
    )
  const q = `meter_id=${big}&from=${iso(T0)}&to=${iso(T0 + N * 60_000)}`
  const r = await fetchRaw(`${q}&format=ndjson`)
  t.equal(r.headers['transfer-encoding'], 'chunked', 'no Content-Length: written as produced')
  t.ok(r.chunks > 1, `${r.chunks} chunks`)
  const lines = r.body.toString().trim().split('\n')
  t.equal(lines.length, N)
  t.equal(JSON.parse(lines[N - 1]!).value, N - 1)
  const csv = await fetchRaw(`${q}&format=csv`)
  t.equal(csv.body.toString().trim().split('\n').length, N + 1, 'one header line, all rows')
  const pq = await readParquet((await fetchRaw(`${q}&format=parquet`)).body)
  t.equal(pq.rows.length, N)
})

t.test('a query failing before the first byte is a 500, not a broken 200', async (t) => {
  const sql = s.app.parts.store.sql
  const real = sql.stream.bind(sql)
  // Fault injection at the transport (the store stays real for everything else).
  sql.stream = async function* () {
    yield* []
    throw new Error('ClickHouse unavailable (injected)')
  }
  t.teardown(() => {
    sql.stream = real
  })
  const r = await fetchRaw(`${RANGE}&format=csv`)
  t.equal(r.status, 500)
  t.same(JSON.parse(r.body.toString()), { message: 'Internal server error.' })
  t.notMatch(r.body.toString(), /injected/, 'the cause is logged, not answered')
})

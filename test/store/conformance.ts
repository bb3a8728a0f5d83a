// The store conformance suite: every case here runs against each Sql adapter (embedded chDB
// in chdb.test.ts, a ClickHouse server in server.test.ts), so both speak one dialect and
// behave the same where the rest of the code relies on it.
import type { Test } from 'tap'
import { FILE_BODY_MIN_BYTES } from '../../src/store/body-files.js'
import { BodyWriter } from '../../src/store/body-writer.js'
import { FEED_COLUMNS, FeedRows } from '../../src/store/feed-rows.js'
import { GroupCommit } from '../../src/store/group-commit.js'
import {
  readingsColumns,
  rowHeads,
  writeReadingRow,
  type RowOut,
  type StoredReadingRow,
} from '../../src/store/reading-row.js'
import { ROLLUP_TABLE } from '../../src/store/rollup.js'
import { ROLLUP_FEED, rollupFedApart } from '../../src/store/rollup-feed.js'
import { migrate, migrations } from '../../src/store/migrations.js'
import {
  bodyParts,
  chTime,
  joinBody,
  parseChTime,
  toJsonEachRow,
  tsvText,
  type InsertBody,
  type InsertOptions,
  type Params,
  type Sql,
} from '../../src/store/sql.js'

/** Wraps a Sql and records each insert: how many, and which `id`s were stored when. */
class CountingSql implements Sql {
  readonly kind
  inserts = 0
  readonly stored = new Set<number>()
  /** Each INSERT takes at least this long (a slow store), so others gather behind it. */
  minInsertMs = 0
  constructor(private readonly inner: Sql) {
    this.kind = inner.kind
  }
  query<T>(sql: string, params?: Params): Promise<T[]> {
    return this.inner.query<T>(sql, params)
  }
  exec(sql: string, params?: Params): Promise<void> {
    return this.inner.exec(sql, params)
  }
  async insert(table: string, rows: InsertBody, opts?: InsertOptions): Promise<void> {
    const slow = new Promise((r) => setTimeout(r, this.minInsertMs))
    await this.inner.insert(table, rows, opts)
    await slow
    this.inserts++
    for (const line of joinBody(bodyParts(rows)).toString().split('\n'))
      if (line) this.stored.add(Number(JSON.parse(line).id))
  }
  stream(sql: string, params: Params, format: string): AsyncIterable<Uint8Array> {
    return this.inner.stream(sql, params, format)
  }
  close(): Promise<void> {
    return Promise.resolve()
  }
}

export function storeConformance(t: Test, sql: Sql): void {
  t.test(
    'large arrays: IN lists of 100,000 strings and 200,000 integers, a transform of 50,000',
    async (t) => {
      // chDB took a CAST of a large array (as its binding makes) for minutes: 48 s for 70,000
      // strings; a server refused 10,000 meter identifiers in its URL ("Field value too long").
      const table = `big_in_${process.pid}`
      await sql.exec(
        `CREATE TABLE ${table} (k UInt64, s String, d DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY k`,
      )
      t.teardown(() => sql.exec(`DROP TABLE IF EXISTS ${table}`))
      await sql.exec(
        `INSERT INTO ${table} SELECT number, concat('m-', toString(number)), toDateTime64(number, 3, 'UTC') FROM numbers(300000)`,
      )
      const count = async (where: string, params: Record<string, unknown>) =>
        Number(
          (
            await sql.query<{ n: number }>(
              `SELECT count() AS n FROM ${table} WHERE ${where}`,
              params,
            )
          )[0]!.n,
        )
      const names = Array.from({ length: 100_000 }, (_, i) => `m-${i * 2}`)
      t.equal(await count('s IN {n:Array(String)}', { n: names }), 100_000, 'strings')
      const ints = Array.from({ length: 200_000 }, (_, i) => i + 100_000)
      t.equal(await count('k IN {u:Array(UInt64)}', { u: ints }), 200_000, 'integers')
      t.equal(
        await count("d IN {d:Array(DateTime64(3, 'UTC'))} AND s IN {n:Array(String)}", {
          d: ['1970-01-01 00:00:08.000', '1970-01-01 00:00:09', '1970-01-01 00:00:10.5'],
          n: names,
        }),
        1,
        'DateTime64 values beside a large list',
      )
      // Typed arrays outside an IN (the exports' transform of meter ids to their names).
      const ids = Array.from({ length: 50_000 }, (_, i) => i * 3)
      t.equal(
        await count(
          "transform(k, {ids:Array(UInt64)}, {names:Array(String)}, '') = s AND toDateTime64(k, 3, 'UTC') IN {d:Array(DateTime64(3, 'UTC'))}",
          {
            ids,
            names: ids.map((k) => `m-${k}`),
            d: ['1970-01-01 00:00:03.000', '1970-01-01 00:00:04.000', '1970-01-01 00:00:06'],
          },
        ),
        2,
        'a transform over 50,000 ids and their names',
      )
      // Few elements, long ones (a batch's telegrams in the quarantine's look-up).
      const long = Array.from({ length: 500 }, (_, i) => `m-${i}`.padEnd(400, 'f'))
      t.equal(
        await count('s IN {n:Array(String)}', { n: [...long, 'm-7'] }),
        1,
        '500 strings of 400 characters',
      )
      // An export streams its rows with its meters' ids as parameters.
      let csv = ''
      for await (const c of sql.stream(
        `SELECT count() FROM ${table} WHERE k IN {u:Array(UInt64)}`,
        { u: ints },
        'CSV',
      ))
        csv += Buffer.from(c).toString()
      t.equal(csv.trim(), '200000', 'a stream with 200,000 integers')
    },
  )

  t.test(
    'stream yields the format bytes; stopping early cancels; queries go on meanwhile',
    async (t) => {
      const q =
        'SELECT number AS n, toString(number) AS s FROM numbers(200000) WHERE number % {m:UInt64} = 0'
      let csv = ''
      for await (const c of sql.stream(q, { m: 2 }, 'CSVWithNames')) {
        csv += Buffer.from(c).toString()
        // Another query while the stream runs must not end it.
        await sql.query('SELECT 1')
      }
      const lines = csv.trim().split('\n')
      t.equal(lines[0], '"n","s"')
      t.equal(lines.length, 100_001)
      t.equal(lines[100_000], '199998,"199998"')
      let chunks = 0
      for await (const c of sql.stream(q, { m: 1 }, 'JSONEachRow')) {
        t.ok(c.length > 0)
        if (++chunks === 1) break
      }
      t.equal(chunks, 1)
      const parquet: Buffer[] = []
      for await (const c of sql.stream(q, { m: 1000 }, 'Parquet')) parquet.push(Buffer.from(c))
      const bytes = Buffer.concat(parquet)
      t.equal(bytes.subarray(0, 4).toString(), 'PAR1', 'a Parquet file')
      t.equal(bytes.subarray(-4).toString(), 'PAR1')
    },
  )

  t.test('migrations apply once, then are idempotent', async (t) => {
    const first = await migrate(sql)
    t.same(
      first,
      migrations.map((m) => m.version),
      'a fresh database gets every migration in order',
    )
    t.same(await migrate(sql), [], 'a second run applies nothing')
    t.same(await migrate(sql), [], 'and a third')
    const rows = await sql.query<{ version: number }>(
      'SELECT version FROM schema_migrations FINAL ORDER BY version',
    )
    t.same(
      rows.map((r) => Number(r.version)),
      migrations.map((m) => m.version),
      'each version recorded exactly once',
    )
    const tables = await sql.query<{ name: string }>(
      'SELECT name FROM system.tables WHERE database = currentDatabase()',
    )
    const names = new Set(tables.map((r) => r.name))
    for (const tb of ['workspaces', 'users', 'api_tokens', 'meters', 'readings', 'status_reports'])
      t.ok(names.has(tb), `table ${tb} exists`)
  })

  t.test('query parameters of each type round-trip', async (t) => {
    const p = {
      s: `it's "quoted" — ü\n\ttab`,
      u64: 2 ** 53 - 1,
      i64: -42,
      f: 1.25,
      b: 1,
      t: '2026-03-29 01:30:00.123',
      arr: ['a', "b'c", ''],
      nul: null,
    }
    const [r] = await sql.query<Record<string, any>>(
      `SELECT {s:String} AS s, {u64:UInt64} AS u64, {i64:Int64} AS i64, {f:Float64} AS f,
              {b:UInt8} AS b, {t:DateTime64(3, 'UTC')} AS t, {arr:Array(String)} AS arr,
              {nul:Nullable(String)} AS nul`,
      p,
    )
    t.equal(r!.s, p.s, 'String with quotes, unicode and control characters')
    // 64-bit integers: the server quotes them in JSON, chDB may not; both read as the number.
    t.equal(Number(r!.u64), p.u64, 'UInt64')
    t.equal(Number(r!.i64), p.i64, 'Int64')
    t.equal(r!.f, p.f, 'Float64')
    t.equal(Number(r!.b), 1, 'UInt8')
    t.equal(r!.t, p.t, 'DateTime64(3) in UTC')
    t.same(r!.arr, p.arr, 'Array(String)')
    t.equal(r!.nul, null, 'Nullable null')

    await sql.exec(
      `CREATE TABLE IF NOT EXISTS conformance_types (id UInt64, s String, f Float64,
       t DateTime64(3, 'UTC'), tags Array(String), n Nullable(UInt32)) ENGINE = MergeTree ORDER BY id`,
    )
    const rows = [
      { id: 1, s: 'plain', f: 0.5, t: chTime(Date.UTC(2026, 0, 1)), tags: ['x'], n: 7 },
      {
        id: 2,
        s: '{"json":"inside"}',
        f: -1e-9,
        t: chTime(Date.UTC(2026, 9, 25, 1, 0, 0, 999)),
        tags: [],
        n: null,
      },
    ]
    await sql.insert('conformance_types', toJsonEachRow(rows))
    const back = await sql.query<Record<string, any>>(
      'SELECT * FROM conformance_types WHERE id IN ({ids:Array(UInt64)}) ORDER BY id',
      { ids: [1, 2] },
    )
    t.same(
      back.map((r) => ({ ...r, id: Number(r.id), n: r.n === null ? null : Number(r.n) })),
      rows,
      'inserted JSONEachRow rows come back unchanged',
    )
    t.equal(parseChTime(back[1]!.t), Date.UTC(2026, 9, 25, 1, 0, 0, 999), 'times are UTC')
    const [c] = await sql.query<{ n: string }>(
      'SELECT count() AS n FROM conformance_types WHERE s = {s:String}',
      { s: '{"json":"inside"}' },
    )
    t.equal(Number(c!.n), 1, 'a String parameter filters exactly')
    await sql.exec('ALTER TABLE conformance_types DELETE WHERE id = {id:UInt64}', { id: 1 })
    const left = await sql.query('SELECT id FROM conformance_types')
    t.equal(left.length, 1, 'exec with parameters (mutation) applies synchronously')
  })

  t.test('ReplacingMergeTree keeps the highest version per key', async (t) => {
    await sql.exec(
      `CREATE TABLE IF NOT EXISTS conformance_rmt (workspace_id UInt64, id UInt64, name String,
       version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY (workspace_id, id)`,
    )
    await sql.insert(
      'conformance_rmt',
      toJsonEachRow([{ workspace_id: 1, id: 1, name: 'v1', version: 1 }]),
    )
    await sql.insert(
      'conformance_rmt',
      toJsonEachRow([{ workspace_id: 1, id: 1, name: 'v3', version: 3 }]),
    )
    // An older version arriving late must not win.
    await sql.insert(
      'conformance_rmt',
      toJsonEachRow([{ workspace_id: 1, id: 1, name: 'v2', version: 2 }]),
    )
    // A replayed identical row must not add.
    await sql.insert(
      'conformance_rmt',
      toJsonEachRow([{ workspace_id: 1, id: 2, name: 'x', version: 1 }]),
    )
    await sql.insert(
      'conformance_rmt',
      toJsonEachRow([{ workspace_id: 1, id: 2, name: 'x', version: 1 }]),
    )
    const rows = await sql.query<{ id: string; name: string }>(
      'SELECT id, name FROM conformance_rmt FINAL ORDER BY id',
    )
    t.same(
      rows.map((r) => [Number(r.id), r.name]),
      [
        [1, 'v3'],
        [2, 'x'],
      ],
    )
    await sql.exec('OPTIMIZE TABLE conformance_rmt FINAL')
    const merged = await sql.query('SELECT id FROM conformance_rmt')
    t.equal(merged.length, 2, 'after a merge only one row per key remains')
  })

  t.test('group commit merges concurrent writes and resolves each after storage', async (t) => {
    await sql.exec(
      `CREATE TABLE IF NOT EXISTS conformance_gc (id UInt64, v String) ENGINE = MergeTree ORDER BY id`,
    )
    const counting = new CountingSql(sql)
    const gc = new GroupCommit(counting, 'conformance_gc')
    const n = 40
    const early: number[] = []
    const writes = Array.from({ length: n }, (_, i) => {
      const row = toJsonEachRow([
        { id: i * 2 + 1, v: `a${i}` },
        { id: i * 2 + 2, v: `b${i}` },
      ])
      return gc.write(row, 2).then(() => {
        // Resolved only once the INSERT carrying both rows succeeded.
        if (!counting.stored.has(i * 2 + 1) || !counting.stored.has(i * 2 + 2)) early.push(i)
      })
    })
    await Promise.all(writes)
    t.same(early, [], 'no write resolved before its rows were stored')
    t.ok(counting.inserts < n, `${n} concurrent writes became ${counting.inserts} inserts`)
    t.ok(counting.inserts <= 2, 'the first write goes alone, the rest share the next insert')
    t.equal(gc.stats.rows, 2 * n)
    const [c] = await sql.query<{ n: string }>('SELECT count() AS n FROM conformance_gc')
    t.equal(Number(c!.n), 2 * n, 'every row stored exactly once')

    // flush waits for everything handed in so far.
    const late = gc.write(toJsonEachRow([{ id: 1000, v: 'late' }]), 1)
    await gc.flush()
    t.ok(counting.stored.has(1000), 'flush returns after the pending insert')
    await late
    t.same(await gc.write('', 0), undefined, 'an empty write resolves at once')
  })

  t.test('rows that may linger ride along with the next urgent insert', async (t) => {
    await sql.exec(
      `CREATE TABLE IF NOT EXISTS conformance_gc_linger (id UInt64) ENGINE = MergeTree ORDER BY id`,
    )
    const counting = new CountingSql(sql)
    const gc = new GroupCommit(counting, 'conformance_gc_linger')
    const t0 = performance.now()
    const lazy = gc.write(toJsonEachRow([{ id: 1 }]), 1, 60_000)
    const urgent = gc.write(toJsonEachRow([{ id: 2 }]), 1)
    await Promise.all([lazy, urgent])
    t.equal(counting.inserts, 1, 'one insert carried both')
    t.ok(performance.now() - t0 < 30_000, 'the lingering row did not wait for its own linger')
    // Alone, a lingering row waits about its linger, then goes.
    const t1 = performance.now()
    await gc.write(toJsonEachRow([{ id: 3 }]), 1, 150)
    const waited = performance.now() - t1
    t.ok(waited >= 140, `waited ${Math.round(waited)} ms for company`)
    t.equal(counting.inserts, 2)
  })

  t.test(
    'rows that may linger, written while an insert runs, still wait for company',
    async (t) => {
      await sql.exec(
        `CREATE TABLE IF NOT EXISTS conformance_gc_linger2 (id UInt64) ENGINE = MergeTree ORDER BY id`,
      )
      const counting = new CountingSql(sql)
      counting.minInsertMs = 200
      const gc = new GroupCommit(counting, 'conformance_gc_linger2')
      const urgent = gc.write(toJsonEachRow([{ id: 1 }]), 1)
      await new Promise((r) => setTimeout(r, 10))
      // The urgent row's INSERT runs for 200 ms: these gather behind it and go together once
      // the first of them has lingered 600 ms, not the moment it ends (at ~200 ms; the
      // second INSERT's own 200 ms would then end it at ~400).
      const t0 = performance.now()
      const lazy: Promise<void>[] = []
      for (let i = 0; i < 5; i++) {
        lazy.push(gc.write(toJsonEachRow([{ id: 10 + i }]), 1, 600))
        await new Promise((r) => setTimeout(r, 40))
      }
      await urgent
      await Promise.all(lazy)
      const waited = performance.now() - t0
      t.ok(
        waited >= 580,
        `the first lazy row waited ${Math.round(waited)} ms, not just the running insert`,
      )
      t.equal(counting.inserts, 2, 'the lazy rows went in one INSERT after the urgent one')
    },
  )

  t.test(
    'a failed insert rejects every waiter of that batch, and the next batch works',
    async (t) => {
      const gc = new GroupCommit(sql, 'conformance_no_such_table')
      const results = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) => gc.write(toJsonEachRow([{ id: i }]), 1)),
      )
      t.same(
        results.map((r) => r.status),
        Array(10).fill('rejected'),
        'every waiter is rejected, none left hanging',
      )
      await sql.exec(
        'CREATE TABLE IF NOT EXISTS conformance_no_such_table (id UInt64) ENGINE = MergeTree ORDER BY id',
      )
      await gc.write(toJsonEachRow([{ id: 99 }]), 1)
      const rows = await sql.query<{ id: string }>('SELECT id FROM conformance_no_such_table')
      t.same(
        rows.map((r) => Number(r.id)),
        [99],
        'after a failure the writer keeps working; nothing of the failed batch was stored',
      )
    },
  )

  t.test(
    'readings rows as the readings writer sends them read back exactly, whatever their text',
    async (t) => {
      await migrate(sql)
      const carried = rollupFedApart(sql)
      const payload = JSON.stringify({
        s: 'quote " backslash \\ tab \t newline \n nul \u0000 ü€😀',
        n: [1, 2.5],
      })
      const odd: RowOut = {
        kind: 'saldo',
        recordedAt: '2026-03-01 10:00:00.123',
        recordedAtMs: Date.parse('2026-03-01T10:00:00.123Z'),
        value: 1e-7,
        unit: 'k\tW\\h\nx\\N\r',
        canonicalValue: null,
        canonicalUnit: null,
        flags: ["it's", 'back\\slash', 'tab\there', 'new\nline', 'cr\r', 'ü€😀', "'", '[]', ','],
        rawTsv: tsvText(payload),
        ingestedAt: '2026-03-01 10:00:01.000',
        version: 7,
        status: carried ? { rawFlags: ["A'B", 'C\\D', 'E\tF\nG'], statuses: ['leak'] } : null,
      }
      const plain: RowOut = {
        ...odd,
        unit: 'kwh',
        canonicalValue: 3.25,
        canonicalUnit: 'kwh',
        flags: [],
        // a telegram's payload arrives as the decoder worker's bytes
        rawTsv: Buffer.from(tsvText(payload)),
        status: null,
      }
      // Past FILE_BODY_MIN_BYTES: the embedded engine reads this body from a file.
      const n = 1_500
      const body = new BodyWriter()
      for (let i = 0; i < n; i++)
        writeReadingRow(body, rowHeads(77, 1 + i), i % 2 ? plain : odd, carried)
      const bytes = body.take()
      t.ok(bytes.length > FILE_BODY_MIN_BYTES, `${bytes.length} bytes`)
      await sql.insert('readings', bytes, {
        collapseInMerges: true,
        columns: readingsColumns(carried),
      })
      const back = await sql.query<StoredReadingRow>(
        'SELECT * FROM readings WHERE workspace_id = 77 ORDER BY meter_id',
      )
      t.equal(back.length, n)
      let bad = 0
      back.forEach((r, i) => {
        const want = i % 2 ? plain : odd
        const got = {
          value: r.value,
          unit: r.unit,
          canonical: [r.canonical_value, r.canonical_unit],
          flags: r.quality_flags,
          payload: r.raw_payload,
          at: [r.recorded_at, r.ingested_at, Number(r.version)],
          status: Number(r.has_status ?? 0) ? [r.status_raw_flags, r.status_codes] : null,
        }
        const expected = {
          value: want.value,
          unit: want.unit,
          canonical: [want.canonicalValue, want.canonicalUnit],
          flags: want.flags,
          payload,
          at: [want.recordedAt, want.ingestedAt, want.version],
          status: want.status ? [want.status.rawFlags, want.status.statuses] : null,
        }
        if (bad < 3 && JSON.stringify(got) !== JSON.stringify(expected)) {
          bad++
          t.same(got, expected, `row ${i}`)
        }
      })
      t.equal(bad, 0, 'every row as written')
    },
  )

  t.test('every column of every table reads back exactly what insert sent', async (t) => {
    await migrate(sql)
    const columns = await sql.query<{ table: string; name: string; type: string }>(
      `SELECT table, name, type FROM system.columns
       WHERE database = currentDatabase() AND table NOT LIKE 'conformance%'
         AND default_kind NOT IN ('MATERIALIZED', 'ALIAS')
       ORDER BY table, position`,
    )
    const byTable = new Map<string, { name: string; type: string }[]>()
    for (const c of columns) byTable.set(c.table, [...(byTable.get(c.table) ?? []), c])
    t.ok(byTable.has('readings') && byTable.has('meters'), 'the schema was found')
    for (const [table, cols] of byTable) {
      const kinds = await sql.query<{ engine: string }>(
        'SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = {t:String}',
        { t: table },
      )
      // Views, and the rollup's aggregate states (written by its view, never by us).
      if (!/MergeTree/.test(kinds[0]?.engine ?? '')) continue
      if (cols.some((c) => c.type.includes('AggregateFunction'))) continue
      const row: Record<string, unknown> = {}
      cols.forEach((c, i) => (row[c.name] = sampleValue(c.type, i)))
      await sql.insert(table, JSON.stringify(row) + '\n')
      const [back] = await sql.query<Record<string, unknown>>(
        `SELECT * FROM ${table} WHERE ${cols[0]!.name} = {v:${cols[0]!.type}} LIMIT 1`,
        { v: row[cols[0]!.name] },
      )
      if (!back) {
        t.fail(`${table}: the inserted row is not there`)
        continue
      }
      for (const c of cols)
        t.same(normal(back[c.name]), normal(row[c.name]), `${table}.${c.name} (${c.type})`)
    }
  })
}

/** A non-default value of a column type, different per column position. */
function sampleValue(type: string, i: number): unknown {
  const inner = /^(?:Nullable|LowCardinality)\((.*)\)$/.exec(type)
  if (inner) return sampleValue(inner[1]!, i)
  const arr = /^Array\((.*)\)$/.exec(type)
  if (arr) return [sampleValue(arr[1]!, i), sampleValue(arr[1]!, i + 1)]
  if (/^UInt8$|^Bool$/.test(type)) return 1
  if (/^U?Int\d+$/.test(type)) return 1000 + i
  if (/^Float/.test(type)) return 1.5 + i
  if (/^DateTime64/.test(type))
    return `2026-01-02 03:04:${String(5 + (i % 50)).padStart(2, '0')}.678`
  if (/^DateTime/.test(type)) return `2026-01-02 03:04:${String(5 + (i % 50)).padStart(2, '0')}`
  if (/^Date/.test(type)) return '2026-01-02'
  if (/^Enum/.test(type)) return /'([^']*)'/.exec(type)![1]
  return `v${i}-äö"\\`
}

/** 64-bit integers come back as strings, Bool as true/false: compare as text. */
function normal(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normal)
  if (typeof v === 'boolean') return v ? '1' : '0'
  return v === null ? null : String(v)
}

/**
 * Upgrades keep stored data: an install whose schema stops at migration 14 (LowCardinality
 * units, flags and status codes) holds readings rows; migration 15 changes those columns'
 * types, and every row reads back as written. `sql` is an empty database of its own.
 */
export function upgradeConformance(t: Test, sql: Sql): void {
  t.test('stored data reads back the same after migrations 15, 17 and 18', async (t) => {
    const carried = rollupFedApart(sql)
    await migrate(
      sql,
      {},
      migrations.filter((m) => m.version < 15),
    )
    const types = () =>
      sql.query<{ name: string; type: string }>(
        `SELECT name, type FROM system.columns WHERE database = currentDatabase()
           AND table = 'readings' AND name IN ('unit', 'canonical_unit', 'quality_flags', 'status_codes')
         ORDER BY name`,
      )
    // Migration 17: the status codes of status_reports, and of the feed that writes them.
    const statusTypes = () =>
      sql.query<{ col: string; type: string }>(
        `SELECT table || '.' || name AS col, type FROM system.columns
         WHERE database = currentDatabase()
           AND (table, name) IN (('status_reports', 'statuses'), ('${ROLLUP_FEED}', 'status_codes'))
         ORDER BY col`,
      )
    t.ok(
      (await types()).every((c) => c.type.includes('LowCardinality')),
      'the old schema has LowCardinality columns',
    )
    const statusBefore = await statusTypes()
    t.ok(
      statusBefore.length && statusBefore.every((c) => c.type.includes('LowCardinality')),
      'the old schema has LowCardinality status codes',
    )
    const reports = Array.from({ length: 50 }, (_, i) => ({
      workspace_id: 88,
      meter_id: 1 + i,
      reported_at: chTime(Date.UTC(2026, 2, 1) + i * 60_000),
      raw_flags: i % 2 ? ['0x10'] : [],
      statuses: [[], ['leak'], ['leak', 'low_battery'], ["o'dd", 'ü€']][i % 4]!,
      version: i + 1,
    }))
    await sql.insert('status_reports', reports.map((r) => JSON.stringify(r) + '\n').join(''))
    const rows: RowOut[] = Array.from({ length: 300 }, (_, i) => ({
      kind: i % 2 ? 'saldo' : 'consumption',
      // One off the whole second: its rollup identity moves by milliseconds (migration 18).
      recordedAt: chTime(Date.UTC(2026, 2, 1) + i * 60_000 + (i === 7 ? 250 : 0)),
      recordedAtMs: Date.UTC(2026, 2, 1) + i * 60_000 + (i === 7 ? 250 : 0),
      value: i,
      unit: [null, 'kwh', 'm3', "it's\tab\t"][i % 4]!,
      canonicalValue: i % 4 ? i : null,
      canonicalUnit: [null, 'kwh', 'm3', 'wh'][i % 4]!,
      flags: [[], ['gap'], ['spike', 'implausible_rate'], ["o'dd", 'ü€']][i % 4]!,
      rawTsv: tsvText(JSON.stringify({ i })),
      ingestedAt: '2026-03-01 10:00:01.000',
      version: i + 1,
      status:
        carried && i % 3 === 0 ? { rawFlags: ['0x10'], statuses: ['leak', 'battery_low'] } : null,
    }))
    const body = new BodyWriter()
    rows.forEach((r, i) => writeReadingRow(body, rowHeads(88, 1 + i), r, carried))
    await sql.insert('readings', body.take(), {
      collapseInMerges: true,
      columns: readingsColumns(carried),
    })

    // The rollup of those readings as it was before migration 18: identities as millisecond
    // offsets within the hour (a server's view wrote the new form: replaced).
    await sql.exec(`DELETE FROM ${ROLLUP_TABLE} WHERE workspace_id = 88`)
    await sql.exec(
      `INSERT INTO ${ROLLUP_TABLE} SELECT workspace_id, meter_id, kind,
         toStartOfHour(recorded_at) AS bucket, toUInt64(count()),
         groupBitmapState(toUInt32(toUnixTimestamp64Milli(recorded_at) - toUnixTimestamp(bucket) * 1000)),
         toUInt64(count(canonical_value)), sum(ifNull(canonical_value, 0)), min(canonical_value),
         max(canonical_value)
       FROM readings WHERE workspace_id = 88 GROUP BY workspace_id, meter_id, kind, bucket`,
    )

    const applied = await migrate(sql)
    t.ok(applied.includes(15) && !applied.includes(14), `migrate applied ${applied.join(', ')}`)
    const after = await types()
    t.equal(after.length, carried ? 4 : 3)
    t.notOk(
      after.some((c) => c.type.includes('LowCardinality')),
      JSON.stringify(after),
    )

    const back = await sql.query<StoredReadingRow>(
      'SELECT * FROM readings WHERE workspace_id = 88 ORDER BY meter_id',
    )
    t.equal(back.length, rows.length)
    const seen = back.map((r) => [
      r.unit,
      r.canonical_unit,
      r.quality_flags,
      Number(r.has_status ?? 0) ? r.status_codes : null,
    ])
    const want = rows.map((r) => [
      r.unit,
      r.canonicalUnit,
      r.flags,
      r.status ? r.status.statuses : null,
    ])
    t.same(seen, want, 'units, flags and status codes as written')

    t.ok(applied.includes(17), 'migration 17 applied')
    const statusAfter = await statusTypes()
    t.same(
      statusAfter.map((c) => c.col),
      [...(carried ? [`${ROLLUP_FEED}.status_codes`] : []), 'status_reports.statuses'],
    )
    t.notOk(
      statusAfter.some((c) => c.type.includes('LowCardinality')),
      JSON.stringify(statusAfter),
    )
    const reportsBack = await sql.query<{ raw_flags: string[]; statuses: string[] }>(
      'SELECT raw_flags, statuses FROM status_reports WHERE workspace_id = 88 ORDER BY meter_id',
    )
    t.same(
      reportsBack,
      reports.map((r) => ({ raw_flags: r.raw_flags, statuses: r.statuses })),
      'status reports as written',
    )

    // Migration 18: the rollup is made again from the stored readings, each identity
    // millisecond × 3600 + second of its hour, and no hour holds one of the old kind.
    t.ok(applied.includes(18), 'migration 18 applied')
    const hourly = () =>
      sql.query<{ meter_id: number | string; rows: number | string; ids: number[] }>(
        `SELECT meter_id, sum(rows) AS rows, bitmapToArray(groupBitmapMergeState(ids)) AS ids
         FROM ${ROLLUP_TABLE} WHERE workspace_id = 88 GROUP BY meter_id ORDER BY meter_id`,
      )
    const want18 = rows.map((_, i) => ({
      meter_id: String(1 + i),
      rows: '1',
      ids: [(i === 7 ? 250 * 3600 : 0) + (i % 60) * 60],
    }))
    const norm = (h: Awaited<ReturnType<typeof hourly>>) =>
      h.map((r) => ({ meter_id: String(r.meter_id), rows: String(r.rows), ids: r.ids.map(Number) }))
    t.same(
      norm(await hourly()),
      want18,
      'every stored reading in the rollup, identities as the new form',
    )
    // A replay of a stored reading now makes its hour dirty: the same identity, two rows.
    const replay = rows[7]!
    if (carried) {
      const feed = new FeedRows()
      feed.row(88, 8, replay)
      await sql.insert(ROLLUP_FEED, feed.take(), { columns: FEED_COLUMNS, binary: true })
    } else {
      const again = new BodyWriter()
      writeReadingRow(again, rowHeads(88, 8), replay, carried)
      await sql.insert('readings', again.take(), { columns: readingsColumns(carried) })
    }
    const [h8] = norm(await hourly()).filter((h) => h.meter_id === '8')
    t.same(h8, { meter_id: '8', rows: '2', ids: [250 * 3600 + 7 * 60] }, 'a replay: dirty hour')
  })
}

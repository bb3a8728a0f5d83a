// Parameters written into the SQL text for the embedded engine (src/store/chdb-params.ts):
// the literal each type gets, what is left to the engine's binding, and, on a real chDB,
// that every value comes back exactly as given and never leaves its literal.
import fs from 'node:fs'
import t from 'tap'
import { ChdbSql } from '../../src/store/chdb.js'
import { inlineParams } from '../../src/store/chdb-params.js'
import { tmpDataDir } from '../helpers/server.js'

t.test('literals by type', async (t) => {
  t.equal(inlineParams('a = {a:UInt64}', { a: 5 }), "a = CAST(5, 'UInt64')")
  t.equal(
    inlineParams('a = {a:UInt64}', { a: '18446744073709551615' }),
    "a = CAST(18446744073709551615, 'UInt64')",
  )
  t.equal(inlineParams('a = {a: Int64 }', { a: -3n }), "a = CAST(-3, 'Int64')")
  t.equal(inlineParams('a = {a:UInt8}', { a: true }), "a = CAST(1, 'UInt8')")
  t.equal(inlineParams('s = {s:String}', { s: "it's a \\ and \0" }), "s = 'it\\'s a \\\\ and \\0'")
  t.equal(
    inlineParams('m IN {ids:Array(UInt64)} AND k IN {ks:Array(String)}', {
      ids: [1, '2'],
      ks: ['a', "b'"],
    }),
    "m IN [1,2] AND k IN ['a','b\\'']",
    "an IN's array is a bare literal",
  )
  t.equal(
    inlineParams('has({ids:Array(UInt64)}, m) OR m in{b:Array(UInt8)}', { ids: [1], b: [2] }),
    "has(CAST([1], 'Array(UInt64)'), m) OR m in[2]",
    'elsewhere a typed one',
  )
  t.equal(inlineParams('{ids:Array(UInt32)}', { ids: [] }), "CAST([], 'Array(UInt32)')")
  t.equal(inlineParams('m IN {ids:Array(UInt32)}', { ids: [] }), "m IN CAST([], 'Array(UInt32)')")
  t.equal(
    inlineParams("t IN {ts:Array(DateTime64(3, 'UTC'))}", {
      ts: ['2026-01-02 03:04:05.678', '2026-01-02 03:04:05'],
    }),
    "t IN ['2026-01-02 03:04:05.678','2026-01-02 03:04:05']",
    "an IN's DateTime64 values as their strings",
  )
  t.equal(
    inlineParams('{s:Array(String)}', { s: ['a'] }),
    "['a']",
    'strings are Array(String) as they are',
  )
  t.equal(
    inlineParams("{ts:Array(DateTime64(3, 'UTC'))}", { ts: ['2026-01-02 03:04:05.678'] }),
    "arrayMap(x -> CAST(x, 'DateTime64(3, \\'UTC\\')'), ['2026-01-02 03:04:05.678'])",
    'elsewhere DateTime64 values cast one by one',
  )
  t.match(
    inlineParams('{ids:Array(UInt64)}', { ids: Array.from({ length: 10_001 }, (_, i) => i) }),
    /^arrayMap\(x -> CAST\(x, 'UInt64'\), \[0,1,2,/,
    'so are integers past 10,000',
  )
  t.equal(inlineParams('{a:UInt64} {a:UInt64}', { a: 7 }), "CAST(7, 'UInt64') CAST(7, 'UInt64')")
  t.equal(inlineParams('no placeholders', {}), 'no placeholders')
})

t.test('what is left to the engine (null)', async (t) => {
  const none: [string, Record<string, unknown>][] = [
    ['{a:UInt64}', {}], // missing
    ['{a:UInt64}', { a: -1 }], // out of range
    ['{a:UInt8}', { a: 256 }],
    ['{a:UInt64}', { a: '18446744073709551616' }],
    ['{a:Int64}', { a: 1.5 }], // not an integer
    ['{a:Int64}', { a: 2 ** 53 + 2 }], // not exact
    ['{a:UInt64}', { a: '1e3' }],
    ['{a:UInt64}', { a: ' 1' }],
    ['{a:UInt64}', { a: null }],
    ['{s:String}', { s: 5 }],
    ['{s:Float64}', { s: 1.5 }], // a type this binder does not take
    ['{s:DateTime64(3)}', { s: '2026-01-01 00:00:00.000' }],
    ['t IN {ts:Array(DateTime64(3))}', { ts: ["2026-01-01 00:00:00.000' OR 1"] }],
    ['t IN {ts:Array(DateTime64(3))}', { ts: [1_767_225_600_000] }],
    ['{s:Nullable(String)}', { s: null }],
    ['{ids:Array(UInt64)}', { ids: '1,2' }],
    ['{ids:Array(UInt64)}', { ids: [1, -2] }],
    ['{ids:Array(String)}', { ids: ['a', 1] }],
    ['{ids:Array(Float64)}', { ids: [1] }],
    ['{a:UInt64} {s:Float64}', { a: 1, s: 1 }], // one unsupported: the whole statement
  ]
  for (const [sql, params] of none)
    t.equal(inlineParams(sql, params), null, `${sql} ${JSON.stringify(params)}`)
})

t.test('on chDB: values come back exactly, and never leave their literal', async (t) => {
  const dir = tmpDataDir()
  const sql = new ChdbSql(dir)
  t.teardown(async () => {
    await sql.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const strings = [
    '',
    'plain',
    "it's",
    "''",
    '\\',
    '\\\\',
    "\\'",
    "x' UNION ALL SELECT 'pwned",
    "'); DROP TABLE readings; --",
    'tab\tnew\nline\rreturn',
    'nul\0inside',
    '{s:String}',
    '{other:UInt64}',
    'ümlaut €uro 😀',
    '\u0001\u001f\u007f',
    '%s %d ?',
  ]
  for (const s of strings) {
    const rows = await sql.query<{ v: string; n: string | number }>(
      'SELECT {s:String} AS v, length({s:String}) AS n',
      { s },
    )
    t.same(rows, [{ v: s, n: rows[0]?.n }], JSON.stringify(s))
    t.equal(Number(rows[0]!.n), Buffer.byteLength(s), `${JSON.stringify(s)}: its bytes`)
  }
  const [a] = await sql.query<{ v: string[] }>('SELECT {a:Array(String)} AS v', { a: strings })
  t.same(a!.v, strings, 'an array of them')

  const [n] = await sql.query<{ t: string; v: string | number; i: string | number; ti: string }>(
    'SELECT toTypeName({n:UInt64}) AS t, toString({n:UInt64}) AS v, toString({i:Int64}) AS i, toTypeName({i:Int64}) AS ti',
    { n: '18446744073709551615', i: '-9223372036854775808' },
  )
  t.same(
    [n!.t, String(n!.v), String(n!.i), n!.ti],
    ['UInt64', '18446744073709551615', '-9223372036854775808', 'Int64'],
    'integers keep their type and every digit',
  )
  const [ids] = await sql.query<{ t: string; v: number[] }>(
    'SELECT toTypeName({ids:Array(UInt32)}) AS t, {ids:Array(UInt32)} AS v',
    { ids: [3, 1, 2] },
  )
  t.same([ids!.t, ids!.v.map(Number)], ['Array(UInt32)', [3, 1, 2]])
  const long = Array.from({ length: 20_000 }, (_, i) => 20_000 - i)
  const [big] = await sql.query<{ t: string; v: number[]; tt: string; tv: string[] }>(
    `SELECT toTypeName({ids:Array(UInt32)}) AS t, {ids:Array(UInt32)} AS v,
            toTypeName({ts:Array(DateTime64(3, 'UTC'))}) AS tt, {ts:Array(DateTime64(3, 'UTC'))} AS tv`,
    { ids: long, ts: ['2026-01-02 03:04:05.678', '1999-12-31 23:59:59'] },
  )
  t.same(
    [big!.t, big!.v.map(Number), big!.tt, big!.tv],
    [
      'Array(UInt32)',
      long,
      "Array(DateTime64(3, 'UTC'))",
      ['2026-01-02 03:04:05.678', '1999-12-31 23:59:59.000'],
    ],
    'arrays cast one by one keep their type and values',
  )
  // Left to the engine: still bound, the same answer.
  const [f] = await sql.query<{ v: number }>('SELECT {f:Float64} AS v', { f: 1.5 })
  t.equal(f!.v, 1.5)
  // Large IN lists: test/store/conformance.ts (both engines).
  t.not(
    inlineParams('x IN {n:Array(String)}', { n: Array.from({ length: 100_000 }, String) }),
    null,
  )
  await t.rejects(
    sql.query('SELECT {missing:UInt64} AS v', {}),
    "a missing parameter is the engine's error",
  )
})

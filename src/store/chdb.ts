// Embedded ClickHouse (chDB) in DATA_DIR. Uses only the async API so the event loop never
// waits on the engine; inserts are synchronous (`async_insert=0`) because chDB's default
// async inserts halved small batches in our measurements, and we group-commit anyway.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Session } from 'chdb'
import { inlineParams, MAX_QUERY_SIZE } from './chdb-params.js'
import { BodyFiles, FILE_BODY_MIN_BYTES } from './body-files.js'
import {
  bodyParts,
  bodySize,
  insertColumns,
  insertFormat,
  insertSettings,
  joinBody,
  type InsertBody,
  type InsertOptions,
  type Params,
  type Sql,
} from './sql.js'

/** Sessions for look-ups and statements, and for INSERTs (see `SessionPool`). */
const READ_SESSIONS = 3
const WRITE_SESSIONS = 2

export class ChdbSql implements Sql {
  readonly kind = 'chdb' as const
  /**
   * A session runs one query at a time. On one session a sort-key look-up of the ingest path
   * (a workspace, under the meter admission lock) waited 86 ms on average behind the delivery
   * engine's scans, and every look-up behind a running INSERT; sessions on the same engine run
   * side by side. INSERTs have sessions of their own so a look-up never waits for a write.
   */
  private readonly reads: SessionPool
  private readonly writes: SessionPool
  private readonly dir: string
  private readonly bodies: BodyFiles
  /**
   * Streams run on a session of their own: any other query on a session ends the stream that
   * session is running, and a session runs one stream at a time (so exports queue here).
   */
  private streamSession: Session | null = null
  private streamTurn: Promise<void> = Promise.resolve()

  constructor(dataDir: string) {
    const dir = path.join(dataDir, 'clickhouse')
    fs.mkdirSync(dir, { recursive: true })
    this.dir = dir
    this.reads = new SessionPool(dir, READ_SESSIONS)
    this.writes = new SessionPool(dir, WRITE_SESSIONS)
    this.bodies = new BodyFiles(path.join(dataDir, 'insert-bodies'))
  }

  async *stream(sql: string, params: Params, format: string): AsyncIterable<Uint8Array> {
    if (format === 'Parquet') {
      yield* this.streamViaFile(sql, params, format)
      return
    }
    let release!: () => void
    const prev = this.streamTurn
    this.streamTurn = new Promise((r) => (release = r))
    await prev
    try {
      this.streamSession ??= newSession(this.dir)
      // Inlined as the other statements are (an export's meter ids and names are large arrays).
      const inlined = inlineParams(sql, params)
      const st =
        inlined !== null
          ? this.streamSession.queryStream(inlined, { format })
          : this.streamSession.queryStreamBind(sql, bindable(params), { format })
      // chDB formats every chunk on its own: a `WithNames` header repeats in each one.
      const header = /WithNames$/.test(format)
      let first = true
      try {
        for await (const chunk of st) {
          let bytes = chunk.raw()
          if (header && !first) bytes = bytes.subarray(bytes.indexOf(10) + 1)
          first = false
          if (bytes.length) yield bytes
        }
      } finally {
        if (!st.closed) st.cancel()
      }
    } finally {
      release()
    }
  }

  /**
   * Formats whose chunks cannot be concatenated (a Parquet file has one footer): the engine
   * writes the whole result to a temporary file, block by block, which is then read out in
   * pieces and removed. Memory stays bounded either way.
   */
  private async *streamViaFile(
    sql: string,
    params: Params,
    format: string,
  ): AsyncIterable<Uint8Array> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-export-'))
    const file = path.join(dir, `export.${format.toLowerCase()}`)
    try {
      await this.exec(
        `INSERT INTO FUNCTION file('${file.replace(/[\\']/g, '')}', '${format}') ${sql}`,
        params,
      )
      for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 }))
        yield chunk as Buffer
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }

  async query<T>(sql: string, params?: Params): Promise<T[]> {
    const r = await this.reads.run((s) => run(s, sql, params, 'JSONEachRow'))
    const text = r.text()
    if (!text) return []
    const rows: T[] = []
    for (const line of text.split('\n')) if (line) rows.push(JSON.parse(line) as T)
    return rows
  }

  async exec(sql: string, params?: Params): Promise<void> {
    await this.reads.run((s) => run(s, sql, params, 'Null'))
  }

  async insert(table: string, rows: InsertBody, opts: InsertOptions = {}): Promise<void> {
    const parts = bodyParts(rows)
    const size = bodySize(parts)
    if (size === 0) return
    const format = insertFormat(opts)
    // One parsing thread: the engine's parallel parsing splits a body into chunks for a pool
    // of threads, which for the ingest path's bodies (a request's rows, a second of rollup
    // feed) costs more CPU than it saves time, on cores the event loop needs (scratch: the
    // feed's INSERT of 100,000 lines 9 % less CPU, a readings INSERT of 2,000 rows 2-5 %).
    const settings = { async_insert: 0, input_format_parallel_parsing: 0, ...insertSettings(opts) }
    const inline = async () => {
      // chdb-node's raw INSERT takes text formats only: a binary body has no way in but a file.
      if (format === 'RowBinary')
        throw new Error(`could not write the ${table} INSERT's RowBinary body to a file`)
      await this.writes.run((s) =>
        s.insert({
          table,
          values: joinBody(parts),
          format,
          settings,
          ...(opts.columns ? { columns: opts.columns } : {}),
        }),
      )
    }
    if (size < FILE_BODY_MIN_BYTES && format !== 'RowBinary') {
      await inline()
      return
    }
    const set = Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join(', ')
    const fromFile = async (file: string) => {
      await this.writes.run((s) =>
        s.queryAsync(
          `INSERT INTO ${table}${insertColumns(opts)} FROM INFILE '${file.replace(/[\\']/g, '\\$&')}' SETTINGS ${set} FORMAT ${format}`,
          { format: 'Null' },
        ),
      )
    }
    await this.bodies.with(parts, size, fromFile, inline)
  }

  async close(): Promise<void> {
    this.streamSession?.close()
    this.writes.close()
    this.reads.close()
    this.bodies.close()
  }
}

/**
 * Sessions opened on demand up to `size`; each query goes to the session with the fewest
 * queries in flight (a session queues what it is given). More sessions than cores still
 * pays: what a query waits for is mostly another query's turn, not a core.
 */
class SessionPool {
  private readonly sessions: { s: Session; busy: number }[] = []

  constructor(
    private readonly dir: string,
    private readonly size: number,
  ) {}

  async run<T>(fn: (s: Session) => Promise<T>): Promise<T> {
    const e = this.pick()
    e.busy++
    try {
      return await fn(e.s)
    } finally {
      e.busy--
    }
  }

  private pick(): { s: Session; busy: number } {
    let best = this.sessions[0]
    for (const e of this.sessions) if (e.busy < best!.busy) best = e
    if (best && (best.busy === 0 || this.sessions.length === this.size)) return best
    const e = { s: newSession(this.dir), busy: 0 }
    this.sessions.push(e)
    return e
  }

  close(): void {
    for (const e of this.sessions) e.s.close()
  }
}

/** A session whose statements may carry large look-ups written into them (chdb-params.ts). */
function newSession(dir: string): Session {
  const s = new Session(dir)
  s.query(`SET max_query_size = ${MAX_QUERY_SIZE}`)
  return s
}

/**
 * One statement on `s`: parameters written into its text where chdb-params.ts takes them
 * all (such statements run side by side), else bound by the engine (one at a time in the
 * whole process).
 */
function run(s: Session, sql: string, params: Params | undefined, format: string) {
  if (!params) return s.queryAsync(sql, { format })
  const inlined = inlineParams(sql, params)
  return inlined !== null
    ? s.queryAsync(inlined, { format })
    : s.queryBindAsync(sql, bindable(params), { format })
}

/** chDB binds numbers and strings; arrays and nulls go through as ClickHouse literals. */
function bindable(params: Params): Params {
  const out: Params = {}
  for (const k in params) {
    const v = params[k]
    out[k] = typeof v === 'boolean' ? Number(v) : v
  }
  return out
}

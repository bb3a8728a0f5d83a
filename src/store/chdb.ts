// Embedded ClickHouse (chDB) in DATA_DIR. Uses only the async API so the event loop never
// waits on the engine; inserts are synchronous (`async_insert=0`) because chDB's default
// async inserts halved small batches in our measurements, and we group-commit anyway.
import fs from 'node:fs'
import path from 'node:path'
import { Session } from 'chdb'
import type { Params, Sql } from './sql.js'

export class ChdbSql implements Sql {
  readonly kind = 'chdb' as const
  private readonly session: Session

  constructor(dataDir: string) {
    const dir = path.join(dataDir, 'clickhouse')
    fs.mkdirSync(dir, { recursive: true })
    this.session = new Session(dir)
  }

  async query<T>(sql: string, params?: Params): Promise<T[]> {
    const r = params
      ? await this.session.queryBindAsync(sql, bindable(params), { format: 'JSONEachRow' })
      : await this.session.queryAsync(sql, { format: 'JSONEachRow' })
    const text = r.text()
    if (!text) return []
    const rows: T[] = []
    for (const line of text.split('\n')) if (line) rows.push(JSON.parse(line) as T)
    return rows
  }

  async exec(sql: string, params?: Params): Promise<void> {
    if (params) await this.session.queryBindAsync(sql, bindable(params), { format: 'Null' })
    else await this.session.queryAsync(sql, { format: 'Null' })
  }

  async insertJsonEachRow(table: string, rows: Buffer | string): Promise<void> {
    if (rows.length === 0) return
    await this.session.insert({
      table,
      values: typeof rows === 'string' ? Buffer.from(rows) : rows,
      format: 'JSONEachRow',
      // A JSON object in a String column is stored as its text (raw payloads are
      // embedded unescaped, saving a second encoding pass per reading).
      settings: { async_insert: 0, input_format_json_read_objects_as_strings: 1 },
    })
  }

  async close(): Promise<void> {
    this.session.close()
  }
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

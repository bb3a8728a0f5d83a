// A ClickHouse server through @clickhouse/client: a thin transport over the same SQL the
// embedded adapter runs. The database named in CLICKHOUSE_URL's path is created if missing.
import { Readable } from 'node:stream'
import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseSettings,
} from '@clickhouse/client'
import { inlineParams, MAX_QUERY_SIZE } from './chdb-params.js'
import { forCluster } from './cluster.js'
import {
  bodyParts,
  bodySize,
  insertColumns,
  insertFormat,
  insertSettings,
  type InsertBody,
  type InsertOptions,
  type Params,
  type Sql,
} from './sql.js'

export interface ServerSqlOptions {
  /** CLICKHOUSE_CLUSTER: tables are Distributed over `<table>_local` (cluster.ts). */
  cluster?: string
}

export class ServerSql implements Sql {
  readonly kind = 'server' as const
  private readonly client: ClickHouseClient

  constructor(
    url: string,
    private readonly opts: ServerSqlOptions = {},
  ) {
    const u = new URL(url)
    const database = u.pathname.replace(/^\//, '') || 'default'
    this.client = createClient({
      url: `${u.protocol}//${u.host}`,
      username: decodeURIComponent(u.username) || 'default',
      password: decodeURIComponent(u.password),
      database,
      clickhouse_settings: {
        async_insert: 0,
        mutations_sync: '2',
        // A Distributed table queues inserts for the shards by default: an acknowledged
        // reading would then live only on the node that took it. Wait for the shard.
        ...(opts.cluster ? { distributed_foreground_insert: 1 } : {}),
      },
      // Failures reach the caller as errors; the client's own console log would repeat
      // them unstructured, outside our logger.
      log: { level: ClickHouseLogLevel.OFF },
    })
  }

  /** The database of the URL may not exist yet: create it over a connection to `default`. */
  static async ensureDatabase(url: string): Promise<void> {
    const u = new URL(url)
    const database = u.pathname.replace(/^\//, '') || 'default'
    const admin = createClient({
      url: `${u.protocol}//${u.host}`,
      username: decodeURIComponent(u.username) || 'default',
      password: decodeURIComponent(u.password),
    })
    try {
      await admin.command({ query: `CREATE DATABASE IF NOT EXISTS \`${database}\`` })
    } finally {
      await admin.close()
    }
  }

  async query<T>(sql: string, params?: Params): Promise<T[]> {
    const rs = await this.client.query({ ...withParams(sql, params), format: 'JSONEachRow' })
    return (await rs.json()) as T[]
  }

  async exec(sql: string, params?: Params): Promise<void> {
    const query = this.opts.cluster ? forCluster(sql, this.opts.cluster) : sql
    await this.client.command(withParams(query, params))
  }

  async insert(table: string, rows: InsertBody, opts: InsertOptions = {}): Promise<void> {
    const parts = bodyParts(rows)
    if (bodySize(parts) === 0) return
    // The bytes we built go out as the request body, untouched: the client's `insert` would
    // JSON.stringify every chunk of its stream (a Buffer became one all-default row).
    const r = await this.client.exec({
      query: `INSERT INTO ${table}${insertColumns(opts)} FORMAT ${insertFormat(opts)}`,
      values: Readable.from(parts, { objectMode: false }),
      clickhouse_settings: insertSettings(opts),
    })
    // Drain the (empty) answer so the socket goes back to the pool.
    r.stream.resume()
    await new Promise((resolve) => r.stream.once('end', resolve))
  }

  async *stream(sql: string, params: Params, format: string): AsyncIterable<Uint8Array> {
    // exec hands back the response body as bytes: the server writes the format, we pass it on.
    const r = await this.client.exec(withParams(`${sql}\nFORMAT ${format}`, params))
    try {
      for await (const chunk of r.stream as AsyncIterable<Uint8Array>) yield chunk
    } finally {
      r.stream.destroy()
    }
  }

  async close(): Promise<void> {
    await this.client.close()
  }
}

/** Below the server's default field limit, with room for the URL encoding of quotes. */
const FIELD_MAX = 64 << 10

/**
 * Where the server gets a statement's parameters: in the request's URL as usual, but one
 * longer than its HTTP form fields take (`http_max_field_value_size`, 128 KiB by default;
 * a batch's 10,000 meter identifiers were refused with "Field value too long") is written
 * into the statement instead, as the embedded engine's are (chdb-params.ts).
 */
function withParams(
  query: string,
  params: Params | undefined,
): { query: string; query_params?: Params; clickhouse_settings?: ClickHouseSettings } {
  if (!params) return { query }
  let long = false
  for (const k in params) long ||= longerThan(params[k], FIELD_MAX)
  const inlined = long ? inlineParams(query, params) : null
  return inlined === null
    ? { query, query_params: params }
    : { query: inlined, clickhouse_settings: { max_query_size: String(MAX_QUERY_SIZE) } }
}

/** Whether `v` as text takes more than `max` characters (an estimate that never says less). */
function longerThan(v: unknown, max: number): boolean {
  if (typeof v === 'string') return v.length > max
  if (!Array.isArray(v)) return false
  let n = 0
  for (const x of v) {
    // Quotes and a comma per element; a number's digits are at most ~24.
    n += (typeof x === 'string' ? x.length : 24) + 3
    if (n > max) return true
  }
  return false
}

// The transport-neutral face of ClickHouse: both adapters (embedded chDB and a ClickHouse
// server) speak the same SQL with `{name:Type}` parameters and JSONEachRow results, so
// everything above this file is written once.

export type Params = Record<string, unknown>

export interface Sql {
  /** Runs a SELECT and returns its rows (JSONEachRow; 64-bit integers arrive as strings). */
  query<T = Record<string, unknown>>(sql: string, params?: Params): Promise<T[]>
  /** Runs a statement without a result (DDL, ALTER, lightweight DELETE). */
  exec(sql: string, params?: Params): Promise<void>
  /** Inserts rows given as JSONEachRow bytes (one JSON object per line). */
  insertJsonEachRow(table: string, rows: Buffer | string): Promise<void>
  close(): Promise<void>
  readonly kind: 'chdb' | 'server'
}

/** Formats a Date or epoch ms as ClickHouse DateTime64(3) text in UTC. */
export function chTime(t: Date | number): string {
  const iso = (typeof t === 'number' ? new Date(t) : t).toISOString()
  return iso.slice(0, 10) + ' ' + iso.slice(11, 23)
}

/** Parses ClickHouse DateTime64 text (UTC) back to epoch ms. */
export function parseChTime(s: string): number {
  return Date.parse(s.replace(' ', 'T') + 'Z')
}

/** ClickHouse DateTime64 text → ISO 8601 with `Z`. */
export function isoFromCh(s: string | null): string | null {
  return s === null ? null : new Date(parseChTime(s)).toISOString()
}

export function toJsonEachRow(rows: readonly object[]): string {
  let out = ''
  for (const r of rows) out += JSON.stringify(r) + '\n'
  return out
}

// A stored `readings` row as SELECT * returns it. 64-bit integers arrive as numbers from
// chDB and as strings from a ClickHouse server, hence the unions.
export interface StoredReadingRow {
  workspace_id: number | string
  meter_id: number | string
  kind: 'consumption' | 'saldo'
  recorded_at: string
  value: number
  unit: string | null
  canonical_value: number | null
  canonical_unit: string | null
  quality_flags: string[]
  raw_payload: string
  ingested_at: string
  version: number | string
  /** Embedded engine only (migration 13): the status report the row carries, if any. */
  has_status?: number
  status_raw_flags?: string[]
  status_codes?: string[]
}

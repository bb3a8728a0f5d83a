// What a meter actor needs from the store: its recent readings (the quality window), the
// newest recorded_at per kind (anything newer cannot be a duplicate), exchanges, the latest
// status, existence checks and neighbourhoods for late readings, and full rows to re-version.
// Look-ups of many meters arriving in the same tick are merged into one query.
import { NEIGHBOURHOOD } from '../actors/quality/index.js'
import type { QualityFlag, TimelineReading } from './quality/index.js'
import type { StoredReadingRow } from '../store/reading-row.js'
import { chTime, parseChTime, type Sql } from '../store/sql.js'
import { latestStatuses, type LatestStatus } from '../store/status.js'

export interface MeterHistory {
  window: TimelineReading[]
  latest: { consumption: number; saldo: number }
  exchanges: {
    exchanged_at: number
    old_final_value: number | null
    new_initial_value: number | null
  }[]
  status: LatestStatus | null
}

/** Rows of one meter matching (kind, recorded_at) keys; the time list lets the index prune. */
const KEY_FILTER = `recorded_at IN {ts:Array(DateTime64(3, 'UTC'))}
  AND concat(toString(kind), '|', toString(recorded_at)) IN {keys:Array(String)}`

function keyParams(keys: { kind: string; t: number }[]) {
  return {
    ts: [...new Set(keys.map((k) => chTime(k.t)))],
    keys: keys.map((k) => `${k.kind}|${chTime(k.t)}`),
  }
}

/** Valid = has a canonical value and no unit mismatch (docs/quality.md). */
const VALID = "canonical_value IS NOT NULL AND NOT has(quality_flags, 'unit_mismatch')"

export function timelineReading(r: {
  kind: string
  recorded_at: string
  canonical_value: number | null
  quality_flags: string[]
}): TimelineReading {
  return {
    kind: r.kind as TimelineReading['kind'],
    recordedAt: parseChTime(r.recorded_at),
    canonicalValue: r.canonical_value === null ? null : Number(r.canonical_value),
    unitMismatch: r.quality_flags.includes('unit_mismatch'),
    flags: r.quality_flags as QualityFlag[],
  }
}

export class HistoryLoader {
  private queue = new Map<
    string,
    {
      ws: number
      ids: number[]
      waiters: Map<number, ((h: MeterHistory) => void)[]>
      fail: ((e: unknown) => void)[]
    }
  >()
  private scheduled = false

  constructor(private readonly sql: Sql) {}

  /** History of one meter; calls in the same tick share one round of queries per workspace. */
  load(ws: number, meterId: number): Promise<MeterHistory> {
    return new Promise((resolve, reject) => {
      const key = String(ws)
      let q = this.queue.get(key)
      if (!q) this.queue.set(key, (q = { ws, ids: [], waiters: new Map(), fail: [] }))
      if (!q.waiters.has(meterId)) {
        q.ids.push(meterId)
        q.waiters.set(meterId, [])
      }
      q.waiters.get(meterId)!.push(resolve)
      q.fail.push(reject)
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => this.flush())
      }
    })
  }

  private flush(): void {
    this.scheduled = false
    const batches = [...this.queue.values()]
    this.queue.clear()
    for (const b of batches)
      this.fetch(b.ws, b.ids).then(
        (res) => {
          for (const [id, ws] of b.waiters) for (const w of ws) w(res.get(id)!)
        },
        (err) => b.fail.forEach((f) => f(err)),
      )
  }

  private async fetch(ws: number, ids: number[]): Promise<Map<number, MeterHistory>> {
    const params = { ws, ids }
    const [window, latest, exchanges, statuses] = await Promise.all([
      this.sql.query<any>(
        `SELECT meter_id, kind, recorded_at, canonical_value, quality_flags FROM readings FINAL
         WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)} AND ${VALID}
         ORDER BY meter_id, kind, recorded_at DESC LIMIT ${NEIGHBOURHOOD} BY meter_id, kind`,
        params,
      ),
      this.sql.query<any>(
        `SELECT meter_id, kind, max(recorded_at) AS latest FROM readings
         WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)} GROUP BY meter_id, kind`,
        params,
      ),
      this.sql.query<any>(
        `SELECT meter_id, exchanged_at, old_final_value, new_initial_value FROM meter_exchanges FINAL
         WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)} ORDER BY exchanged_at`,
        params,
      ),
      latestStatuses(this.sql, ws, ids),
    ])
    const out = new Map<number, MeterHistory>()
    for (const id of ids)
      out.set(id, {
        window: [],
        latest: { consumption: -Infinity, saldo: -Infinity },
        exchanges: [],
        status: statuses.get(id) ?? null,
      })
    for (const r of window) out.get(Number(r.meter_id))!.window.push(timelineReading(r))
    for (const r of latest)
      out.get(Number(r.meter_id))!.latest[r.kind as 'saldo'] = parseChTime(r.latest)
    for (const r of exchanges)
      out.get(Number(r.meter_id))!.exchanges.push({
        exchanged_at: parseChTime(r.exchanged_at),
        old_final_value: r.old_final_value === null ? null : Number(r.old_final_value),
        new_initial_value: r.new_initial_value === null ? null : Number(r.new_initial_value),
      })
    return out
  }

  /** Which of these (kind, recorded_at) of one meter are stored already. */
  async existing(
    ws: number,
    meterId: number,
    keys: { kind: string; t: number }[],
  ): Promise<Set<string>> {
    if (!keys.length) return new Set()
    const rows = await this.sql.query<{ kind: string; recorded_at: string }>(
      `SELECT DISTINCT kind, recorded_at FROM readings
       WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND ${KEY_FILTER}`,
      { ws, m: meterId, ...keyParams(keys) },
    )
    return new Set(rows.map((r) => `${r.kind}:${parseChTime(r.recorded_at)}`))
  }

  /** Valid readings around t (both kinds): `n` before and `n` at or after. */
  async neighbourhood(
    ws: number,
    meterId: number,
    t: number,
    n: number,
  ): Promise<TimelineReading[]> {
    const p = { ws, m: meterId, t: chTime(t) }
    const base = `SELECT kind, recorded_at, canonical_value, quality_flags FROM readings FINAL
      WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND ${VALID}`
    const rows = await this.sql.query<any>(
      `SELECT * FROM (${base} AND recorded_at < {t:DateTime64(3, 'UTC')} ORDER BY kind, recorded_at DESC LIMIT ${n} BY kind)
       UNION ALL
       SELECT * FROM (${base} AND recorded_at >= {t:DateTime64(3, 'UTC')} ORDER BY kind, recorded_at ASC LIMIT ${n} BY kind)`,
      p,
    )
    return rows.map(timelineReading)
  }

  /** Full stored rows (newest version) for re-versioning readings whose flags changed. */
  async rows(
    ws: number,
    meterId: number,
    keys: { kind: string; t: number }[],
  ): Promise<StoredReadingRow[]> {
    if (!keys.length) return []
    return this.sql.query<StoredReadingRow>(
      `SELECT * FROM readings FINAL WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64} AND ${KEY_FILTER}`,
      { ws, m: meterId, ...keyParams(keys) },
    )
  }
}

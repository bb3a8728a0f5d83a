// The wM-Bus key quarantine (docs/decoders.md "Key diagnostics"): telegrams rejected because
// their meter has no key or a wrong key, kept so they can be replayed once the right key is
// stored. Bounded per workspace by age (received_at; the workspace's
// quarantine_retention_days, else QUARANTINE_RETENTION_DAYS) and per meter by count.
// One row per (meter, recorded_at, telegram): the same telegram reported again replaces it.
import { chTime, isoFromCh, toJsonEachRow, type Sql } from './sql.js'
import { Coalescer } from './coalescer.js'

export interface QuarantinedTelegram {
  workspace_id: number
  meter_id: number
  /** The meter identifier the reading goes to (replayed as `meter`). */
  identifier: string
  /** Epoch ms. */
  recorded_at: number
  /** `recorded_at` as the device sent it, replayed unchanged. */
  recorded_at_text: string
  telegram: string
  reason: string
  /** Epoch ms. */
  received_at: number
}

export interface QuarantineBounds {
  /** Telegrams of workspace `ws` received longer ago than this are dropped (its setting). */
  retentionMs: (ws: number) => Promise<number>
  /** Telegrams kept per meter; the newest by recorded_at win. */
  perMeter: number
}

const TS = "DateTime64(3, 'UTC')"

export class WmbusQuarantineRepo {
  /**
   * Whether a meter has telegrams waiting, asked at every key PUT: one query per call was
   * the whole cost of putting a fleet's keys (8 × 500 meters at 16 calls at a time: 4,000
   * queries queued one behind another in the engine, 342 meters/s, the bench's mode 5 row).
   */
  private readonly waiting = new Coalescer<number, boolean>((ws, ids) => this.anyOf(ws, ids), true)

  constructor(
    private readonly sql: Sql,
    private readonly bounds: QuarantineBounds,
  ) {}

  /** Keeps `rows`, then applies the bounds to the meters they belong to. */
  async keep(rows: QuarantinedTelegram[]): Promise<void> {
    if (!rows.length) return
    await this.sql.insert(
      'wmbus_quarantine',
      toJsonEachRow(
        rows.map((r) => ({
          ...r,
          recorded_at: chTime(r.recorded_at),
          received_at: chTime(r.received_at),
        })),
      ),
    )
    const now = Math.max(...rows.map((r) => r.received_at))
    const meters = new Map<number, Set<number>>()
    for (const r of rows) {
      let m = meters.get(r.workspace_id)
      if (!m) meters.set(r.workspace_id, (m = new Set()))
      m.add(r.meter_id)
    }
    for (const [ws, ids] of meters) await this.bound(ws, [...ids], now)
  }

  /**
   * Drops what is past the bounds for these meters: expired rows, and rows beyond the
   * newest `perMeter`. Asks first, so the common case (within bounds) deletes nothing.
   */
  async bound(ws: number, meterIds: number[], now: number): Promise<void> {
    const cutoff = chTime(now - (await this.bounds.retentionMs(ws)))
    const over = await this.sql.query<{ meter_id: string; expired: string; cut: string | null }>(
      `SELECT meter_id, countIf(received_at < {cutoff:${TS}}) AS expired,
         if(count() > {n:UInt32}, toString(arrayElement(arrayReverseSort(groupArray(recorded_at)), {n:UInt32})), NULL) AS cut
       FROM wmbus_quarantine FINAL
       WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)}
       GROUP BY meter_id HAVING expired > 0 OR cut IS NOT NULL`,
      { ws, ids: meterIds, cutoff, n: this.bounds.perMeter },
    )
    for (const o of over) {
      const p = { ws, m: Number(o.meter_id), cutoff, cut: o.cut ?? chTime(0) }
      await this.sql.exec(
        `DELETE FROM wmbus_quarantine WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}
         AND (received_at < {cutoff:${TS}} OR recorded_at < {cut:${TS}})`,
        p,
      )
    }
  }

  /**
   * Deletes every workspace's rows past the retention (the scheduler's retention pass), also
   * of meters that never quarantine again; returns how many it found.
   */
  async pruneExpired(now: number): Promise<number> {
    const present = await this.sql.query<{ ws: string }>(
      'SELECT DISTINCT workspace_id AS ws FROM wmbus_quarantine',
    )
    let total = 0
    for (const { ws } of present) {
      const p = { ws, cutoff: chTime(now - (await this.bounds.retentionMs(Number(ws)))) }
      const where = `workspace_id = {ws:UInt64} AND received_at < {cutoff:${TS}}`
      const [r] = await this.sql.query<{ n: string }>(
        `SELECT count() AS n FROM wmbus_quarantine WHERE ${where}`,
        p,
      )
      const n = Number(r?.n ?? 0)
      if (n > 0) await this.sql.exec(`DELETE FROM wmbus_quarantine WHERE ${where}`, p)
      total += n
    }
    return total
  }

  /** The meter's quarantined telegrams within the bounds, oldest recorded first. */
  async list(ws: number, meterId: number, now: number): Promise<QuarantinedTelegram[]> {
    // Most meters have none (a key stored before their first telegram): a key look-up
    // answers that for 3 CPU ms in chDB where the deduplicated list costs 7.5.
    if (!(await this.waiting.ask(ws, meterId))) return []
    const rows = await this.sql.query<Record<string, any>>(
      `SELECT * FROM (
         SELECT * FROM wmbus_quarantine FINAL
         WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}
           AND received_at >= {cutoff:${TS}}
         ORDER BY recorded_at DESC LIMIT {n:UInt32})
       ORDER BY recorded_at, telegram`,
      {
        ws,
        m: meterId,
        cutoff: chTime(now - (await this.bounds.retentionMs(ws))),
        n: this.bounds.perMeter,
      },
    )
    return rows.map((r) => ({
      workspace_id: Number(r.workspace_id),
      meter_id: Number(r.meter_id),
      identifier: r.identifier,
      recorded_at: Date.parse(isoFromCh(r.recorded_at)!),
      recorded_at_text: r.recorded_at_text,
      telegram: r.telegram,
      reason: r.reason,
      received_at: Date.parse(isoFromCh(r.received_at)!),
    }))
  }

  /** Per meter of `ids`, whether any telegram of it is quarantined (no FINAL: any version is one). */
  private async anyOf(ws: number, ids: number[]): Promise<boolean[]> {
    const rows = await this.sql.query<{ m: number | string }>(
      `SELECT DISTINCT meter_id AS m FROM wmbus_quarantine
       WHERE workspace_id = {ws:UInt64} AND meter_id IN {ids:Array(UInt64)}`,
      { ws, ids: [...new Set(ids)] },
    )
    const found = new Set(rows.map((r) => Number(r.m)))
    return ids.map((id) => found.has(id))
  }

  /** Removes these telegrams of the meter (replayed and stored). */
  async remove(ws: number, meterId: number, telegrams: string[]): Promise<void> {
    if (!telegrams.length) return
    await this.sql.exec(
      `DELETE FROM wmbus_quarantine WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}
       AND telegram IN {t:Array(String)}`,
      { ws, m: meterId, t: [...new Set(telegrams)] },
    )
  }
}

// A late reading's stored neighbours (HistoryLoader.neighbourhood): per kind, the valid
// readings just before and from each asked time, for many meters in one query.
import { KINDS, type Kind } from '../domain/quality.js'
import { COLS, NEWEST, VALID } from './history-rows.js'
import { RECENT_MS } from './recent-first.js'
import { chTime, type Sql } from './sql.js'

/** How far before a late reading's time its neighbours are looked for first. */
const NEIGHBOURHOOD_SPAN = RECENT_MS

/**
 * Per kind, the `n` valid readings before and the `n` from each meter's time (`times`, in
 * the order of `ids`): first from NEIGHBOURHOOD_SPAN before the round's earliest time on,
 * then over the whole history for the meters that found fewer than `n` before their time
 * there (the newest `n` before a time within the span are its newest `n` before it at all).
 */
export async function neighbourRows(
  sql: Sql,
  ws: number,
  ids: number[],
  times: number[],
  n: number,
): Promise<any[]> {
  const since = chTime(Math.min(...times) - NEIGHBOURHOOD_SPAN)
  const parts = await Promise.all(
    KINDS.map(async (kind) => {
      const near = await aroundQuery(sql, ws, ids, times, n, kind, since)
      const before = new Map<number, number>()
      for (const r of near)
        if (r.after === 0) before.set(Number(r.meter_id), (before.get(Number(r.meter_id)) ?? 0) + 1)
      const short = ids.flatMap((id, i) => ((before.get(id) ?? 0) >= n ? [] : [i]))
      if (!short.length) return near
      const shortIds = new Set(short.map((i) => ids[i]!))
      const rest = await aroundQuery(
        sql,
        ws,
        short.map((i) => ids[i]!),
        short.map((i) => times[i]!),
        n,
        kind,
      )
      return near.filter((r) => !shortIds.has(Number(r.meter_id))).concat(rest)
    }),
  )
  return parts.flat()
}

function aroundQuery(
  sql: Sql,
  ws: number,
  ids: number[],
  times: number[],
  n: number,
  kind: Kind,
  since?: string,
): Promise<any[]> {
  const at =
    "transform(meter_id, {ids:Array(UInt64)}, {tv:Array(DateTime64(3, 'UTC'))}, toDateTime64(0, 3, 'UTC'))"
  const within = since ? "AND recorded_at >= {since:DateTime64(3, 'UTC')}" : ''
  const base = `SELECT ${COLS} FROM readings WHERE workspace_id = {ws:UInt64}
    AND meter_id IN {ids:Array(UInt64)} AND kind = {kind:String} ${within}`
  return sql.query<any>(
    `SELECT *, 0 AS after FROM (SELECT * FROM (${base} AND recorded_at < ${at} ${NEWEST})
       WHERE ${VALID} ORDER BY meter_id, recorded_at DESC LIMIT ${n} BY meter_id)
     UNION ALL
     SELECT *, 1 AS after FROM (SELECT * FROM (${base} AND recorded_at >= ${at} ${NEWEST})
       WHERE ${VALID} ORDER BY meter_id, recorded_at ASC LIMIT ${n} BY meter_id)`,
    { ws, ids, tv: times.map(chTime), kind, ...(since ? { since } : {}) },
  )
}

// A meter's recorded exchanges (api-v1.md "meter exchanges"): when an old counter was
// replaced by a new one, with the old final and new initial values in the meter's unit.
import { chTime, isoFromCh, type Sql } from './sql.js'
import type { Store } from './store.js'

export interface StoredExchange {
  id: number
  meter_id: number
  exchanged_at: string
  old_final_value: number | null
  new_initial_value: number | null
  created_at: string
}

/** A meter's recorded exchanges, oldest first (values in the meter's unit). */
export async function listExchanges(
  sql: Sql,
  ws: number,
  meterId: number,
): Promise<StoredExchange[]> {
  const rows = await sql.query<Record<string, any>>(
    `SELECT * FROM meter_exchanges FINAL WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}
     ORDER BY exchanged_at, id`,
    { ws, m: meterId },
  )
  return rows.map((r) => ({
    id: Number(r.id),
    meter_id: Number(r.meter_id),
    exchanged_at: isoFromCh(r.exchanged_at)!,
    old_final_value: r.old_final_value === null ? null : Number(r.old_final_value),
    new_initial_value: r.new_initial_value === null ? null : Number(r.new_initial_value),
    created_at: isoFromCh(r.created_at)!,
  }))
}

export interface ExchangeRow {
  exchangedAt: number
  oldFinalValue: number | null
  newInitialValue: number | null
}

/** Recorded exchanges of one meter (values in the meter's unit, as stored). */
export async function meterExchanges(
  sql: Sql,
  ws: number,
  meterId: number,
): Promise<ExchangeRow[]> {
  const rows = await sql.query<Record<string, any>>(
    `SELECT toUnixTimestamp64Milli(exchanged_at) AS t, old_final_value, new_initial_value
     FROM meter_exchanges FINAL WHERE workspace_id = {ws:UInt64} AND meter_id = {m:UInt64}
     ORDER BY exchanged_at, id`,
    { ws, m: meterId },
  )
  return rows.map((r) => ({
    exchangedAt: Number(r.t),
    oldFinalValue: r.old_final_value === null ? null : Number(r.old_final_value),
    newInitialValue: r.new_initial_value === null ? null : Number(r.new_initial_value),
  }))
}

/** Records an exchange; returns its id. `exchangedAt` and `now` are epoch ms. */
export async function insertExchange(
  store: Store,
  e: {
    ws: number
    meterId: number
    exchangedAt: number
    oldFinalValue: number | null
    newInitialValue: number | null
    now: number
  },
): Promise<number> {
  const id = await store.nextId('meter_exchanges')
  await store.sql.insert(
    'meter_exchanges',
    JSON.stringify({
      workspace_id: e.ws,
      meter_id: e.meterId,
      id,
      exchanged_at: chTime(e.exchangedAt),
      old_final_value: e.oldFinalValue,
      new_initial_value: e.newInitialValue,
      created_at: chTime(e.now),
    }),
  )
  return id
}

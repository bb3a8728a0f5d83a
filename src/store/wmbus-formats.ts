// The compact-frame format book (decode/format-book.ts) in the store: every format a
// decoder worker learnt from a full frame, per workspace and meter link identity. Formats
// found or kept here are remembered in memory, so the store is asked only about formats
// this process has not seen yet.
import {
  formatKey,
  type FormatBook,
  type FormatKey,
  type KnownFormat,
} from '../decode/format-book.js'
import { GroupCommit } from './group-commit.js'
import { chTime, toJsonEachRow, type Sql } from './sql.js'

/** Formats remembered in memory; the oldest are dropped past this (the store keeps all). */
const REMEMBERED = 100_000

export class WmbusFormatRepo implements FormatBook {
  private readonly known = new Map<string, string>()
  /**
   * First contact of a fleet teaches a format per new meter in every request: the requests
   * decoded at the same time share an INSERT (one each was a part each to merge).
   */
  private readonly writes: GroupCommit

  constructor(
    private readonly sql: Sql,
    private readonly now: () => number,
  ) {
    this.writes = new GroupCommit(sql, 'wmbus_formats')
  }

  private remember(key: string, format: string): void {
    this.known.delete(key)
    this.known.set(key, format)
    if (this.known.size > REMEMBERED) this.known.delete(this.known.keys().next().value!)
  }

  async find(keys: FormatKey[]): Promise<Map<string, string>> {
    const out = new Map<string, string>()
    const ask: FormatKey[] = []
    for (const k of keys) {
      const f = this.known.get(formatKey(k))
      if (f) out.set(formatKey(k), f)
      else ask.push(k)
    }
    if (ask.length === 0) return out
    const wanted = new Set(ask.map(formatKey))
    const rows = await this.sql.query<{
      workspace_id: string
      manufacturer: number
      device_id: number
      signature: number
      format: string
    }>(
      `SELECT workspace_id, manufacturer, device_id, signature, format FROM wmbus_formats FINAL
       WHERE workspace_id IN {ws:Array(UInt64)} AND device_id IN {ids:Array(UInt32)}`,
      {
        ws: [...new Set(ask.map((k) => k.scope))],
        ids: [...new Set(ask.map((k) => k.id >>> 0))],
      },
    )
    for (const r of rows) {
      const key = formatKey({
        scope: Number(r.workspace_id),
        id: r.device_id,
        m: r.manufacturer,
        sig: r.signature,
      })
      if (!wanted.has(key)) continue
      out.set(key, r.format)
      this.remember(key, r.format)
    }
    return out
  }

  async keep(formats: KnownFormat[]): Promise<void> {
    const fresh = formats.filter((f) => this.known.get(formatKey(f)) !== f.format)
    if (fresh.length === 0) return
    const learned_at = chTime(this.now())
    await this.writes.write(
      toJsonEachRow(
        fresh.map((f) => ({
          workspace_id: f.scope,
          manufacturer: f.m,
          device_id: f.id >>> 0,
          signature: f.sig,
          format: f.format,
          learned_at,
        })),
      ),
      fresh.length,
    )
    for (const f of fresh) this.remember(formatKey(f), f.format)
  }
}

// The phases of a turn that work on the turn alone (its window, readings and rows), not on
// the actor's own state: flag, restate and the status reports. runTurns (turns.ts) runs each
// for every turn of a batch between the actor's own phases (meter-actor.ts).
import { canonicalize, isUnit, meterUnit, type Canonical } from '../domain/units.js'
import { chTime } from '../store/sql.js'
import { rowOutOf, type RowOut, type StoredReadingRow } from '../store/reading-row.js'
import type { ActorEnv } from './actor-env.js'
import type { ActorReading } from './actor-reading.js'
import type { StatusOut, Turn } from './meter-actor.js'
import type { QualityFlag } from './quality/index.js'
import { append, readingKey } from './turn-lists.js'

/**
 * Phase 2, flag: each new reading goes into the window in order, gets its flags and its
 * row. Neighbours whose flags changed: new rows of this turn are amended in place, stored
 * ones are listed in `restate`.
 */
export function flagTurn(env: ActorEnv, turn: Turn, now: string): void {
  const tl = turn.tl!
  const meter = turn.meter
  // A new array only once the window calls one a duplicate (most turns keep them all).
  let created: ActorReading[] | null = null
  let changed: Map<string, QualityFlag[]> | null = null
  const unit = meterUnit(meter)
  for (let i = 0; i < turn.created.length; i++) {
    const r = turn.created[i]!
    const c: Canonical =
      r.unit !== null && isUnit(r.unit)
        ? canonicalize(r.value, r.unit, unit)
        : { canonicalValue: null, canonicalUnit: null, unitMismatch: false }
    const res = tl.insert({
      kind: r.kind,
      recordedAt: r.recordedAt,
      canonicalValue: c.canonicalValue,
      unitMismatch: c.unitMismatch,
    })
    if (res.duplicate) {
      r.verdict = 'duplicate'
      created ??= turn.created.slice(0, i)
      continue
    }
    turn.rows = append(turn.rows, {
      kind: r.kind,
      recordedAt: chTime(r.recordedAt),
      recordedAtMs: r.recordedAt,
      value: r.value,
      unit: r.unit,
      canonicalValue: c.canonicalValue,
      canonicalUnit: c.canonicalUnit,
      flags: res.flags,
      rawTsv: r.rawPayload,
      ingestedAt: now,
      version: env.store.version(),
      status: env.store.rollupFedApart ? r.status : null,
    })
    for (const ch of res.changed)
      (changed ??= new Map()).set(readingKey(ch.kind, ch.recordedAt), ch.flags)
    r.verdict = 'created'
    created?.push(r)
  }
  if (created) turn.created = created
  turn.changed = changed
  if (!changed) return
  const own = new Map<string, RowOut>()
  for (const row of turn.rows) own.set(readingKey(row.kind, row.recordedAtMs), row)
  for (const [k, flags] of changed) {
    const mine = own.get(k)
    if (mine) mine.flags = flags
    else {
      const [kind, t] = k.split(':')
      turn.restate = append(turn.restate, { kind: kind!, t: Number(t) })
    }
  }
}

/**
 * Phase 3, restate: stored neighbours whose flags changed are written again as a new
 * version (ReplacingMergeTree keeps the newest) from their full stored rows.
 */
export function restateTurn(env: ActorEnv, turn: Turn, stored: StoredReadingRow[]): void {
  for (const old of stored) {
    // The rows asked for are the neighbours listed in `restate`: nearly all changed.
    const row = rowOutOf(old)
    const flags = turn.changed!.get(readingKey(row.kind, row.recordedAtMs))
    if (!flags) continue
    turn.rows = append(turn.rows, {
      ...row,
      flags,
      // Above the stored row's version, whichever instance's clock wrote it (HLC).
      version: env.store.versionAfter(old.version),
    })
  }
}

/**
 * Phase 4, write (this turn's part): status report lines of the created readings, where
 * they are not carried by their readings rows (Store.rollupFedApart), and the newest.
 */
export function statusReportsOf(env: ActorEnv, turn: Turn): void {
  const ws = turn.meter.workspace_id
  const carried = env.store.rollupFedApart
  let out: StatusOut | null = null
  for (const r of turn.created) {
    if (!r.status) continue
    out ??= { rows: '', count: 0, versions: [], newest: null }
    if (!carried) {
      const version = env.store.version()
      out.versions.push(version)
      out.rows +=
        JSON.stringify({
          workspace_id: ws,
          meter_id: turn.meter.id,
          reported_at: chTime(r.recordedAt),
          raw_flags: r.status.rawFlags,
          statuses: r.status.statuses,
          version,
        }) + '\n'
      out.count++
    }
    if (!out.newest || r.recordedAt >= out.newest.reportedAt)
      out.newest = {
        statuses: r.status.statuses,
        reportedAt: r.recordedAt,
        rawFlags: r.status.rawFlags,
      }
  }
  turn.status = out
}

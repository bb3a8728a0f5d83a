// Backfill of reading quality (operator-api.md, "Scheduler and jobs"): recomputes the
// canonical value (units of the meter's family only; otherwise canonical null and
// `unit_mismatch`) and the quality flags of stored readings with the same rules the ingest
// path uses (computeFlags), and stores a new version only of rows that changed. A pulse
// reading is converted again from its raw payload (pulses × the meter's current weight,
// in its current pulse unit), so a corrected pulse_weight/pulse_unit reaches stored rows.
import { computeFlags, type QualityFlag, type TimelineReading } from '../actors/quality/index.js'
import { meterExchanges } from '../store/exchanges.js'
import { qualityContext } from '../domain/quality-context.js'
import { pulseReadings, storedPulseCounts } from '../ingest/pulses.js'
import { canonicalize, isUnit, meterUnit } from '../domain/units.js'
import type { JobDeps } from './deps.js'
import type { Meter } from '../store/meter-row.js'
import { rewriteReadings, storedReadings } from '../store/meter-data.js'
import type { StoredReadingRow } from '../store/reading-row.js'
import { parseChTime } from '../store/sql.js'

const WRITE_CHUNK = 5000

const sameArr = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x, i) => x === b[i])

/** Rewrites one meter's readings where they changed; returns how many rows were rewritten. */
export async function backfillMeter(
  s: Pick<JobDeps, 'coord' | 'meters' | 'store' | 'tenants'>,
  m: Meter,
): Promise<number> {
  await s.store.flush()
  const rows = await storedReadings(s.store, m.workspace_id, m.id)
  if (!rows.length) return 0
  const ctx = qualityContext(m, await meterExchanges(s.store.sql, m.workspace_id, m.id))
  const timeline: TimelineReading[] = []
  const declared = meterUnit(m)
  const sources = rows.map((r) => pulseSource(m, r) ?? { value: Number(r.value), unit: r.unit })
  const canonical = rows.map((r, i) => {
    const src = sources[i]!
    const c = isUnit(src.unit)
      ? canonicalize(src.value, src.unit, declared)
      : { canonicalValue: null, canonicalUnit: null, unitMismatch: false }
    timeline.push({
      kind: r.kind,
      recordedAt: parseChTime(r.recorded_at),
      canonicalValue: c.canonicalValue,
      unitMismatch: c.unitMismatch,
      flags: [],
    })
    return c
  })
  const flags: QualityFlag[][] = computeFlags(timeline, ctx)
  const changed: string[] = []
  const version = await s.store.sharedVersion()
  rows.forEach((r, i) => {
    const c = canonical[i]!
    const f = flags[i]!
    const src = sources[i]!
    const storedValue = r.canonical_value === null ? null : Number(r.canonical_value)
    if (
      Number(r.value) === src.value &&
      r.unit === src.unit &&
      storedValue === c.canonicalValue &&
      r.canonical_unit === c.canonicalUnit &&
      sameArr(r.quality_flags, f)
    )
      return
    changed.push(
      JSON.stringify({
        ...r,
        value: src.value,
        unit: src.unit,
        canonical_value: c.canonicalValue,
        canonical_unit: c.canonicalUnit,
        quality_flags: f,
        version,
      }),
    )
  })
  await rewriteReadings(s.store, changed, WRITE_CHUNK)
  // Meter actors holding this meter's timeline in memory reload it.
  if (changed.length)
    await s.coord.publish('readings-rewritten', `${m.workspace_id}:${m.id}`).catch(() => {})
  return changed.length
}

/** A pulse reading's value and unit from its raw payload and the meter's current weight. */
function pulseSource(m: Meter, r: StoredReadingRow): { value: number; unit: string } | null {
  const counts = storedPulseCounts(r.raw_payload)
  if (!counts) return null
  const reading = pulseReadings(m, counts)?.find((x) => x.kind === r.kind)
  return reading ? { value: reading.value, unit: reading.unit } : null
}

export async function backfillReadingQuality(
  s: Pick<JobDeps, 'coord' | 'meters' | 'store' | 'tenants'>,
  opts: { workspaceId?: number; meterId?: number },
): Promise<{ readings_rewritten: number }> {
  let meters: Meter[]
  if (opts.meterId !== undefined) {
    const m =
      opts.workspaceId !== undefined
        ? await s.meters.byId(opts.workspaceId, opts.meterId)
        : await s.meters.findAnyById(opts.meterId)
    meters = m ? [m] : []
  } else if (opts.workspaceId !== undefined) meters = await s.meters.list(opts.workspaceId)
  else {
    meters = []
    for (const w of await s.tenants.listWorkspaces()) meters.push(...(await s.meters.list(w.id)))
  }
  let n = 0
  for (const m of meters) n += await backfillMeter(s, m)
  return { readings_rewritten: n }
}

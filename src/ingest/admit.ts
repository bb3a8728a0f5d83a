// Step 2: admission. Resolves every item's meter — existing, upgraded from the unconfirmed
// default profile, or auto-provisioned under 'Ungrouped meters' within the hourly cap and
// the plan limit — and decides the per-item rejections that do not depend on history.
import type { Coord } from '../coord/coord.js'
import { meterCreatedData } from '../events/catalog.js'
import type { Outbox, OutboxEvent } from '../events/outbox.js'
import { isOperational, newMeter, type Meter } from '../store/meter-row.js'
import type { MeterRepo } from '../store/meters.js'
import type { TenantRepo, Workspace } from '../store/tenants.js'
import type { PreparedItem, PreparedReading } from './prepared-item.js'
import type { ItemStatus } from './types.js'
import { isUnit } from '../domain/units.js'
import { pulseReadings } from './pulses.js'

export interface AdmittedItem {
  item: PreparedItem
  meter: Meter | null
  /** Readings to hand to the meter's actor; empty when rejected. */
  readings: PreparedReading[]
  rejection?: { status: ItemStatus; reason?: string }
}

export interface AdmitDeps {
  meters: MeterRepo
  tenants: TenantRepo
  coord: Coord
  outbox: Outbox
}

/**
 * How many of `n` new meters (the first ones, in request order) may be created: within the
 * plan limit (operational meters, stored or `pending`: admitted by a request served in the
 * same turn of the creation lock) and the hourly provisioning cap, taken in one step. As
 * one at a time would decide: once the cap runs out every later meter is refused by the cap,
 * otherwise those past the plan limit by the plan.
 */
async function admitNew(
  deps: AdmitDeps,
  ws: number,
  w: Workspace,
  n: number,
  pending: number,
): Promise<{ allowed: number; refused: ItemStatus | null }> {
  const room = Math.min(n, await deps.meters.planRoom(ws, w.plan_meter_limit, pending))
  if (room === 0) return { allowed: 0, refused: 'rejected_plan_limit' }
  const key = `provision:${ws}`
  let want = room
  for (;;) {
    const r = await deps.coord.take(key, w.provision_cap_per_hour, 3_600_000, want)
    if (r.ok) break
    // Refused: the count is unchanged; take what is left of the window.
    want = Math.min(want - 1, w.provision_cap_per_hour - r.count)
    if (want <= 0) return { allowed: 0, refused: 'rejected_provision_limit' }
  }
  if (want < room) return { allowed: want, refused: 'rejected_provision_limit' }
  return { allowed: room, refused: room < n ? 'rejected_plan_limit' : null }
}

export async function admitBatch(
  deps: AdmitDeps,
  ws: number,
  items: PreparedItem[],
): Promise<AdmittedItem[]> {
  const meterOf = await deps.meters.lookup(ws)
  const resolved = new Map<string, { meter: Meter; created: boolean } | { refused: ItemStatus }>()

  // Known meters first; the unknown ones are created together below.
  const unknown: PreparedItem[] = []
  const named = new Set<string>()
  const upgrades: Promise<void>[] = []
  for (const it of items) {
    if (named.has(it.identifier)) continue
    const meter = meterOf(it.identifier)
    // A repeat of a telegram another gateway's report brought (telegram-repeats.ts) creates
    // no meter: that report does. Eight gateways hearing one new meter made eight requests
    // compete to create it (the telegram bench's first contact heard by all 8).
    if (!meter && it.rejection?.status === 'duplicate') continue
    named.add(it.identifier)
    if (!meter) {
      unknown.push(it)
      continue
    }
    if (it.declared && meter.profile_needs_review) {
      // The unconfirmed provisioning default is upgraded to the declared profile. A batch's
      // upgrades are saved together, sharing an INSERT: one after another, a fleet whose
      // reports began declaring their profile cost an INSERT per meter in one request.
      const save = deps.meters.save({
        ...meter,
        profile_key: it.profile.key,
        profile_version: it.profile.version,
        profile_needs_review: false,
      })
      upgrades.push(
        save.then((m) => void resolved.set(it.identifier, { meter: m, created: false })),
      )
      continue
    }
    resolved.set(it.identifier, { meter, created: false })
  }
  // All settled before an answer, also when one failed: nothing of the request still writing.
  for (const r of await Promise.allSettled(upgrades)) if (r.status === 'rejected') throw r.reason

  if (unknown.length) {
    const w: Workspace = (await deps.tenants.workspace(ws))!
    const made = await deps.meters.createMany(
      ws,
      unknown.map((it) => {
        const first = it.readings[0]
        return newMeter(it.identifier, {
          unit: first && first.unit && isUnit(first.unit) ? first.unit : null,
          profile_key: it.profile.key,
          profile_version: it.profile.version,
          profile_needs_review: !it.declared,
        })
      }),
      (n, pending) => admitNew(deps, ws, w, n, pending),
    )
    const events: OutboxEvent[] = []
    made.forEach((r, i) => {
      resolved.set(unknown[i]!.identifier, r)
      if ('meter' in r && r.created) {
        events.push({ event: 'meter.created', data: meterCreatedData(r.meter) })
      }
    })
    await deps.outbox.emitMany(ws, events)
  }

  return items.map((it) => {
    const r = resolved.get(it.identifier)
    if (!r) return { item: it, meter: null, readings: [], rejection: it.rejection! }
    if ('refused' in r)
      return {
        item: it,
        meter: null,
        readings: [],
        rejection: { status: r.refused },
      }
    const { meter } = r
    if (!isOperational(meter.lifecycle_state))
      return {
        item: it,
        meter,
        readings: [],
        rejection: {
          status: 'rejected_meter_retired',
          reason: `meter is ${meter.lifecycle_state}`,
        },
      }
    if (it.rejection) return { item: it, meter, readings: [], rejection: it.rejection }
    if (it.pulse) {
      const readings = pulseReadings(meter, it.pulse)
      if (!readings)
        return {
          item: it,
          meter,
          readings: [],
          rejection: {
            status: 'rejected_unconfigured',
            reason: 'meter has no pulse weight configured',
          },
        }
      return { item: it, meter, readings }
    }
    return { item: it, meter, readings: it.readings }
  })
}

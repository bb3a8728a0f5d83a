// Step 2: admission. Resolves every item's meter — existing, upgraded from the unconfirmed
// default profile, or auto-provisioned under 'Ungrouped meters' within the hourly cap and
// the plan limit — and decides the per-item rejections that do not depend on history.
import type { Coord } from '../coord/coord.js'
import type { Outbox } from '../events/outbox.js'
import { isOperational, newMeter, type Meter, type MeterRepo } from '../store/meters.js'
import type { TenantRepo, Workspace } from '../store/tenants.js'
import type { PreparedItem, PreparedReading } from './prepare.js'
import type { ItemStatus } from './types.js'
import { isUnit } from './units.js'
import { pulseReadings } from './pulses.js'

export interface AdmittedItem {
  item: PreparedItem
  meter: Meter | null
  /** The meter was created by this request (it has no history to load). */
  created: boolean
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

export async function admitBatch(
  deps: AdmitDeps,
  ws: number,
  items: PreparedItem[],
): Promise<AdmittedItem[]> {
  let workspace: Workspace | null | undefined
  const meterOf = await deps.meters.lookup(ws)
  const resolved = new Map<string, { meter: Meter; created: boolean } | { refused: ItemStatus }>()

  for (const it of items) {
    if (resolved.has(it.identifier)) continue
    let meter = meterOf(it.identifier)
    let created = false
    if (!meter) {
      workspace ??= await deps.tenants.getWorkspace(ws)
      const w = workspace!
      const first = it.readings[0]
      const r = await deps.meters.create(
        ws,
        newMeter(it.identifier, {
          unit: first && first.unit && isUnit(first.unit) ? first.unit : null,
          profile_key: it.profile.key,
          profile_version: it.profile.version,
          profile_needs_review: !it.declared,
        }),
        async (): Promise<ItemStatus | null> => {
          if (await deps.meters.atPlanLimit(ws, w.plan_meter_limit)) return 'rejected_plan_limit'
          const cap = await deps.coord.take(`provision:${ws}`, w.provision_cap_per_hour, 3_600_000)
          return cap.ok ? null : 'rejected_provision_limit'
        },
      )
      if ('refused' in r) {
        resolved.set(it.identifier, { refused: r.refused })
        continue
      }
      meter = r.meter
      created = r.created
      if (r.created)
        await deps.outbox.emit(ws, 'meter.created', {
          meter: {
            id: meter.id,
            identifier: meter.meter_identifier,
            name: meter.name,
            unit: meter.unit,
            group_id: meter.group_id,
          },
        })
    } else if (it.declared && meter.profile_needs_review) {
      // The unconfirmed provisioning default is upgraded to the declared profile.
      meter = {
        ...meter,
        profile_key: it.profile.key,
        profile_version: it.profile.version,
        profile_needs_review: false,
      }
      await deps.meters.save(meter)
    }
    resolved.set(it.identifier, { meter, created })
  }

  return items.map((it) => {
    const r = resolved.get(it.identifier)!
    if ('refused' in r)
      return {
        item: it,
        meter: null,
        created: false,
        readings: [],
        rejection: { status: r.refused },
      }
    const { meter, created } = r
    if (!isOperational(meter.lifecycle_state))
      return {
        item: it,
        meter,
        created,
        readings: [],
        rejection: {
          status: 'rejected_meter_retired',
          reason: `meter is ${meter.lifecycle_state}`,
        },
      }
    if (it.rejection) return { item: it, meter, created, readings: [], rejection: it.rejection }
    if (it.pulse) {
      const readings = pulseReadings(meter, it.pulse)
      if (!readings)
        return {
          item: it,
          meter,
          created,
          readings: [],
          rejection: {
            status: 'rejected_unconfigured',
            reason: 'meter has no pulse weight configured',
          },
        }
      return { item: it, meter, created, readings }
    }
    return { item: it, meter, created, readings: it.readings }
  })
}

// derive=consumption: loads the meter's canonical saldo readings and recorded exchanges and
// hands them to the pure deriveConsumption (src/query/derive.ts, rules in docs/derive.md).
// Exchange baselines and rollover_max are stored in the meter's unit and converted here.
import type { Meter } from '../store/meters.js'
import type { Sql } from '../store/sql.js'
import { deriveConsumption, type DerivedRow } from './derive.js'
import { meterExchanges } from '../store/exchanges.js'
import { saldoPoints } from '../store/readings-query.js'
import { familyOf, meterUnit, settingToCanonical } from '../domain/units.js'

export async function derivedConsumption(
  sql: Sql,
  meter: Meter,
  from: number,
  to: number,
  interpolate: 'linear' | null,
): Promise<DerivedRow[]> {
  const [{ points, canonicalUnit }, exchanges] = await Promise.all([
    saldoPoints(sql, meter.workspace_id, meter.id, from, to),
    meterExchanges(sql, meter.workspace_id, meter.id),
  ])
  const conv = (v: number | null) => settingToCanonical(meter, v)
  const unit = canonicalUnit ?? familyOf(meterUnit(meter))
  return deriveConsumption(points, {
    rolloverMax: conv(meter.rollover_max),
    expectedIntervalMinutes: meter.expected_interval_minutes,
    exchanges: exchanges.map((e) => ({
      exchangedAt: e.exchangedAt,
      oldFinalValue: conv(e.oldFinalValue),
      newInitialValue: conv(e.newInitialValue),
    })),
    interpolate,
    unit: unit === 'kwh' || unit === 'm3' ? unit : null,
  })
}

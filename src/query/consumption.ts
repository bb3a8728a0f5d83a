// derive=consumption: loads the meter's canonical saldo readings and recorded exchanges and
// hands them to the pure deriveConsumption (src/query/derive.ts, rules in docs/derive.md).
// Exchange baselines and rollover_max are stored in the meter's unit and converted here.
import type { Meter } from '../store/meter-row.js'
import type { Sql } from '../store/sql.js'
import { deriveConsumption, type DerivedRow } from './derive.js'
import { meterExchanges } from '../store/exchanges.js'
import { saldoPoints } from '../store/readings-query.js'
import { familyOf, meterUnit } from '../domain/units.js'
import { qualityContext } from '../domain/quality-context.js'

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
  const unit = canonicalUnit ?? familyOf(meterUnit(meter))
  return deriveConsumption(points, {
    ...qualityContext(meter, exchanges),
    interpolate,
    unit: unit === 'kwh' || unit === 'm3' ? unit : null,
  })
}

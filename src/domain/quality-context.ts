// What the quality rules and derived consumption know of a meter: its rollover, its expected
// interval and its exchanges, all in canonical units. One builder for the meter actor, the
// backfill, transfers and derive, so the four can never convert a meter's numbers differently.
import type { MeterQualityContext } from './quality.js'
import { settingToCanonical } from './units.js'

export interface MeterSettings {
  unit: string | null
  pulse_unit: string | null
  rollover_max: number | null
  expected_interval_minutes: number | null
}

/** An exchange as recorded: epoch ms, values in the meter's unit (meterUnit). */
export interface RecordedExchange {
  exchangedAt: number
  oldFinalValue: number | null
  newInitialValue: number | null
}

export function qualityContext(
  m: MeterSettings,
  exchanges: readonly RecordedExchange[],
): MeterQualityContext {
  const canon = (v: number | null) => settingToCanonical(m, v)
  return {
    rolloverMax: canon(m.rollover_max),
    expectedIntervalMinutes: m.expected_interval_minutes,
    exchanges: exchanges.map((e) => ({
      exchangedAt: e.exchangedAt,
      oldFinalValue: canon(e.oldFinalValue),
      newInitialValue: canon(e.newInitialValue),
    })),
  }
}

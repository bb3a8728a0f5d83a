// A telegram's analysis (analyze.ts) as text for a terminal: `meterflow decode` prints it,
// `--json` prints the analysis itself.
import type { TelegramAnalysis } from './analyze.js'

/** The analysis as text for a terminal (CLI `meterflow decode`). */
export function formatAnalysis(a: TelegramAnalysis): string {
  const kv = (o: Record<string, unknown>) =>
    Object.entries(o)
      .filter(([k]) => k !== 'layer')
      .map(
        ([k, v]) => `${k}=${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`,
      )
      .join(' ')
  const lines: string[] = []
  lines.push(
    a.status === 'ok'
      ? `ok: meter ${a.identifier}, ${a.value} ${a.unit ?? '(no unit)'}`
      : `${a.status}: ${a.reason} (layer: ${a.failed?.layer})`,
  )
  lines.push('layers:')
  for (const l of a.layers) lines.push(`  ${String(l.layer).padEnd(8)} ${kv(l)}`)
  const { steps, ...sec } = a.security as { steps?: Record<string, unknown>[] }
  lines.push(`security: ${kv(sec)}`)
  for (const s of steps ?? []) lines.push(`  step: ${kv(s)}`)
  lines.push(`records (${a.records.length}):`)
  for (const r of a.records) {
    const v = r.value === null ? '-' : String(r.value)
    lines.push(
      `  ${String(r.index).padStart(2)} ${String(r.header).padEnd(14)} ${String(r.quantity).padEnd(22)} ` +
        `${v} ${r.unit ?? ''}  storage ${r.storage} tariff ${r.tariff} subunit ${r.subunit} ${r.function}` +
        ` [${r.data}, ${r.vif_table} VIF]${r.selected ? '  <= register' : ''}${r.not_a_register ? '  (not a register: ' + String(r.not_a_register) + ')' : ''}`,
    )
  }
  if (a.register) lines.push(`register: record ${a.register.record}: ${String(a.register.why)}`)
  return lines.join('\n')
}

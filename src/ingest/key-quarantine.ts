// Which rejected telegrams go to the key quarantine (store/wmbus-quarantine.ts): encrypted
// telegrams of a meter with no key (rejected_unconfigured) or a wrong key (a
// rejected_undecodable "wrong key: ..." reason). Everything else rejected is not a key
// problem and a new key would not change its outcome, so it is not kept.
import type { WmbusQuarantineRepo, QuarantinedTelegram } from '../store/wmbus-quarantine.js'
import type { AdmittedItem } from './admit.js'

/** True when a stored key could change this rejection. */
export function isKeyRejection(status: string, reason: string | undefined): boolean {
  if (status === 'rejected_unconfigured') return true
  return status === 'rejected_undecodable' && (reason ?? '').startsWith('wrong key')
}

export class KeyQuarantine {
  constructor(
    private readonly repo: WmbusQuarantineRepo,
    private readonly now: () => number,
  ) {}

  /** Keeps the batch's telegrams rejected for their key (called by the pipeline). */
  async keep(ws: number, admitted: readonly AdmittedItem[]): Promise<void> {
    const received_at = this.now()
    const rows: QuarantinedTelegram[] = []
    for (const a of admitted) {
      const r = a.rejection
      if (!r || !a.meter || !a.item.telegram) continue
      if (!isKeyRejection(r.status, r.reason)) continue
      rows.push({
        workspace_id: ws,
        meter_id: a.meter.id,
        identifier: a.item.identifier,
        recorded_at: a.item.recordedAt,
        recorded_at_text: a.item.recordedAtText,
        telegram: a.item.telegram.hex,
        reason: r.reason ?? r.status,
        received_at,
      })
    }
    await this.repo.keep(rows)
  }

  list(ws: number, meterId: number): Promise<QuarantinedTelegram[]> {
    return this.repo.list(ws, meterId, this.now())
  }

  /** Drops what is past the retention in every workspace (scheduler/retention.ts). */
  pruneExpired(): Promise<number> {
    return this.repo.pruneExpired(this.now())
  }

  remove(ws: number, meterId: number, telegrams: string[]): Promise<void> {
    return this.repo.remove(ws, meterId, telegrams)
  }
}

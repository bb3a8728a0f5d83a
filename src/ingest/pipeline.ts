// The ingest pipeline: validate (whole batch, 422 on any violation) -> decode -> admit
// (provisioning, caps, lifecycle) -> meter actors (idempotency, units, quality, status)
// -> store (group commit) -> answer. Every entry point runs exactly this.
import type { ActorRegistry } from '../actors/registry.js'
import type { ActorReading } from '../actors/actor-reading.js'
import type { DecoderPool } from '../decode/index.js'
import type { Coord } from '../coord/coord.js'
import type { Outbox } from '../events/outbox.js'
import type { MeterRepo } from '../store/meters.js'
import type { ProfileRepo } from '../store/profiles.js'
import type { TenantRepo } from '../store/tenants.js'
import { admitBatch } from './admit.js'
import { ingestChannel } from './channel.js'
import { prepareBatch } from './prepare.js'
import type { PreparedItem } from './prepared-item.js'
import { releaseClaims, type TelegramSighting } from './telegram-repeats.js'
import type { KeyQuarantine } from './key-quarantine.js'
import { isCanonicalStatus } from './statuses.js'
import type { Ingest, IngestOutcome, IngestRequest, ItemResult } from './types.js'

export interface PipelineDeps {
  meters: MeterRepo
  profiles: ProfileRepo
  tenants: TenantRepo
  coord: Coord
  outbox: Outbox
  decoder: DecoderPool | null
  actors: ActorRegistry
  now: () => number
  maxItems: number
  /** Window in which a repeat of one wM-Bus telegram is a duplicate (0: off). */
  telegramRepeatWindowMs?: number
  /** Keeps telegrams rejected for a missing or wrong key (ingest/key-quarantine.ts). */
  quarantine?: Pick<KeyQuarantine, 'keep'>
  /** Called once per delivery with its outcome (events, metrics). */
  onOutcome?: (ws: number, source: IngestRequest['source'], outcome: IngestOutcome) => void
}

type ItemVerdict = 'created' | 'duplicate' | null

/** Raw flags → canonical statuses through the profile; an unknown flag is `error`. */
function mapStatuses(it: PreparedItem): string[] {
  if (it.statuses) return it.statuses
  const map = it.profile.status_map ?? {}
  const out = new Set<string>()
  for (const f of it.rawFlags ?? []) {
    const mapped = map[f] ?? (isCanonicalStatus(f) ? f : 'error')
    out.add(isCanonicalStatus(mapped) ? mapped : 'error')
  }
  return [...out]
}

export class IngestPipeline implements Ingest {
  constructor(private readonly deps: PipelineDeps) {}

  ingest(req: IngestRequest): Promise<IngestOutcome> {
    if (!ingestChannel.hasSubscribers) return this.run(req)
    return ingestChannel.tracePromise(() => this.run(req), { pipeline: this, req })
  }

  private async run(req: IngestRequest): Promise<IngestOutcome> {
    const prepared = await prepareBatch(
      this.deps,
      req.workspaceId,
      req.items,
      req.errorPrefix ?? 'readings',
    )
    // Per item, once its meter's turn has ended: created, or a duplicate of a stored reading.
    const itemVerdicts: ItemVerdict[] = new Array(prepared.length).fill(null)
    try {
      return await this.store(req, prepared, itemVerdicts)
    } finally {
      await this.releaseUnstored(prepared, itemVerdicts)
    }
  }

  /** Admission, the meters' turns and the answer of a prepared batch. */
  private async store(
    req: IngestRequest,
    prepared: PreparedItem[],
    itemVerdicts: ItemVerdict[],
  ): Promise<IngestOutcome> {
    const d = this.deps
    const ws = req.workspaceId
    const admitted = await admitBatch(d, ws, prepared)
    // kept before the answer, so a telegram answered rejected for its key is never lost
    await d.quarantine?.keep(ws, admitted)

    // Readings per meter, each tagged with its item so answers go back in request order.
    const perMeter = new Map<
      number,
      {
        meter: NonNullable<(typeof admitted)[number]['meter']>
        readings: ActorReading[]
      }
    >()
    const owner: number[] = []
    let hadTelegrams = false
    // Loops, not forEach: a callback per item made a closure per item of every request.
    for (let idx = 0; idx < admitted.length; idx++) {
      const a = admitted[idx]!
      const meter = a.meter
      if (a.item.telegram) hadTelegrams = true
      if (a.rejection || !meter || a.readings.length === 0) continue
      const statuses =
        a.item.rawFlags !== null
          ? { rawFlags: a.item.rawFlags, statuses: mapStatuses(a.item) }
          : null
      let group = perMeter.get(meter.id)
      for (let j = 0; j < a.readings.length; j++) {
        const r = a.readings[j]!
        owner.push(idx)
        const reading: ActorReading = {
          ref: owner.length - 1,
          kind: r.kind,
          recordedAt: a.item.recordedAt,
          value: r.value,
          unit: r.unit,
          rawPayload: a.item.rawPayload,
          // One status report per item, carried by its first reading.
          status: j === 0 ? statuses : null,
          verdict: null,
        }
        // A meter's first reading in a literal of one (a first push reserves room for 16).
        if (group) group.readings.push(reading)
        else perMeter.set(meter.id, (group = { meter, readings: [reading] }))
      }
    }

    // Every meter's turn is waited for, also when one fails: a request is answered only
    // once nothing of it is still being written (a turn that failed stored nothing; the
    // others may have — a retry then answers those as duplicates).
    const groups = [...perMeter.values()]
    const turns = await d.actors.handleMany(groups)
    for (const [i, t] of turns.entries()) {
      if (t.status === 'rejected') continue
      for (const r of groups[i]!.readings) {
        const idx = owner[r.ref]!
        const v = r.verdict ?? 'duplicate'
        // An item is created when any of its readings was stored.
        if (v === 'created' || itemVerdicts[idx] === null) itemVerdicts[idx] = v
      }
    }
    for (const t of turns) if (t.status === 'rejected') throw t.reason
    // Every turn has ended, its rows stored: the decoded telegrams' payload bytes are read
    // no more, and their buffers serve the decoder's next results.
    if (hadTelegrams) d.decoder?.recycle(admitted.map((a) => a.item.rawPayload))

    const results: ItemResult[] = []
    let accepted = 0
    let duplicates = 0
    let rejected = 0
    for (let idx = 0; idx < admitted.length; idx++) {
      const a = admitted[idx]!
      // One literal per item (every item of every request): no base object spread into it.
      const r: ItemResult = {
        meter: a.item.identifier,
        kind: a.item.kind,
        recorded_at: a.item.recordedAtText,
        status: itemVerdicts[idx] ?? 'duplicate',
      }
      if (a.rejection) {
        // a repeat of a telegram already heard (telegram-repeats.ts) counts as a duplicate
        if (a.rejection.status === 'duplicate') duplicates++
        else rejected++
        r.status = a.rejection.status
        if (a.rejection.reason) r.reason = a.rejection.reason
      } else if (r.status === 'created') accepted++
      else duplicates++
      results.push(r)
    }
    const outcome = { accepted, duplicates, rejected, results }
    d.onOutcome?.(ws, req.source, outcome)
    return outcome
  }

  /**
   * A telegram's first sighting claimed its repeat key (telegram-repeats.ts); if its reading
   * was not stored (refused, or the request failed), the key is given up, so another
   * gateway's report of the same telegram is stored rather than answered `duplicate`. If
   * that fails too (Redis down), the key lapses with its window.
   */
  private async releaseUnstored(prepared: PreparedItem[], verdicts: ItemVerdict[]): Promise<void> {
    const { coord } = this.deps
    let unstored: TelegramSighting[] | null = null
    for (let i = 0; i < prepared.length; i++) {
      const claim = prepared[i]!.claim
      if (claim && verdicts[i] === null) (unstored ??= []).push(claim)
    }
    if (unstored) await releaseClaims(coord, unstored).catch(() => {})
  }
}

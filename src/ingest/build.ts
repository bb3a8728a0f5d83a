// The ingest part: decoder pool, meter actors, the key quarantine and the pipeline that
// feeds them.
import { HistoryLoader } from '../store/history.js'
import { ActorRegistry } from '../actors/registry.js'
import { CoordMeterLocks } from '../actors/meter-locks.js'
import { DecoderPool } from '../decode/index.js'
import { rejectionSummary, SUMMARISED_BY_CALLER } from './rejections.js'
import type { Outbox } from '../events/outbox.js'
import type { Base } from '../store/base.js'
import { WmbusFormatRepo } from '../store/wmbus-formats.js'
import { WmbusQuarantineRepo } from '../store/wmbus-quarantine.js'
import { KeyQuarantine } from './key-quarantine.js'
import { IngestPipeline } from './pipeline.js'

export interface IngestParts {
  pipeline: IngestPipeline
  decoder: DecoderPool
  actors: ActorRegistry
  keyQuarantine: KeyQuarantine
  /** Per-meter leases across instances (Redis only): their lingering leases go back at stop. */
  locks: CoordMeterLocks | null
}

export async function buildIngest(
  s: Pick<
    Base,
    'config' | 'log' | 'clock' | 'coord' | 'store' | 'tenants' | 'meters' | 'profiles'
  > & {
    outbox: Outbox
  },
): Promise<IngestParts> {
  const outbox = s.outbox
  const decoder = new DecoderPool({
    workers: s.config.WORKERS,
    formats: new WmbusFormatRepo(s.store.sql, () => s.clock.now()),
  })
  // Stamps are row versions of the store's clock: what other instances wrote since one is
  // read by its row versions (meter-locks.ts).
  const locks =
    s.coord.kind === 'redis'
      ? new CoordMeterLocks(s.coord, {
          clock: s.store,
          keepMs: s.config.METER_LEASE_KEEP_S * 1000,
        })
      : null
  const actors = new ActorRegistry({
    store: s.store,
    history: new HistoryLoader(s.store.sql, () => s.clock.now()),
    outbox,
    locks,
    takeUnused: (id) => s.meters.takeUnused(id),
    now: () => s.clock.now(),
  })
  const quarantine = new KeyQuarantine(
    new WmbusQuarantineRepo(s.store.sql, {
      retentionMs: async (ws) =>
        ((await s.tenants.workspace(ws))?.quarantine_retention_days ??
          s.config.QUARANTINE_RETENTION_DAYS) * 86_400_000,
      perMeter: s.config.QUARANTINE_PER_METER,
    }),
    () => s.clock.now(),
  )
  const pipeline = new IngestPipeline({
    meters: s.meters,
    profiles: s.profiles,
    tenants: s.tenants,
    coord: s.coord,
    outbox,
    decoder,
    actors,
    now: () => s.clock.now(),
    maxItems: s.config.MAX_BATCH_ITEMS,
    telegramRepeatWindowMs: s.config.TELEGRAM_REPEAT_WINDOW_MS,
    quarantine,
    onOutcome: (ws, source, outcome) => {
      // reading.rejected: once per delivery, never per reading (webhooks and imports
      // summarise their whole delivery themselves).
      if (outcome.rejected > 0 && !SUMMARISED_BY_CALLER.has(source))
        outbox
          .emit(ws, 'reading.rejected', { ...rejectionSummary({ ...outcome, source }) })
          .catch((err) => s.log.error({ err }, 'could not emit reading.rejected'))
    },
  })
  // A recorded exchange or a backfill changes what the actor holds: it reloads.
  for (const channel of ['exchanges', 'readings-rewritten'])
    await s.coord.subscribe(channel, (msg) => actors.forget(Number(msg.split(':')[1])))
  return { pipeline, decoder, actors, keyQuarantine: quarantine, locks }
}

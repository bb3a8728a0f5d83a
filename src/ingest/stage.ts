// The ingest stage: decoder pool, meter actors and the pipeline, published as `s.ingest`.
import { HistoryLoader } from '../store/history.js'
import { ActorRegistry } from '../actors/registry.js'
import { CoordMeterLocks } from '../coord/meter-locks.js'
import { DecoderPool } from '../decode/index.js'
import { rejectionSummary, SUMMARISED_BY_CALLER } from '../events/rejections.js'
import type { Outbox } from '../events/outbox.js'
import type { Services } from '../services.js'
import { WmbusFormatRepo } from '../store/wmbus-formats.js'
import type { Stage } from '../stages.js'
import { WmbusQuarantineRepo } from '../store/wmbus-quarantine.js'
import { KeyQuarantine } from './key-quarantine.js'
import { IngestPipeline } from './pipeline.js'

export async function buildIngestStage(
  s: Services,
): Promise<Stage & { actors: ActorRegistry; decoder: DecoderPool }> {
  // Always the current outbox: the events stage may replace it after we are built.
  const outbox: Outbox = { emit: (ws, event, data) => s.outbox.emit(ws, event, data) }
  const decoder = new DecoderPool({
    workers: s.config.WORKERS,
    formats: new WmbusFormatRepo(s.store.sql, () => s.clock.now()),
  })
  const actors = new ActorRegistry({
    store: s.store,
    history: new HistoryLoader(s.store.sql),
    outbox,
    locks: s.coord.kind === 'redis' ? new CoordMeterLocks(s.coord) : null,
    now: () => s.clock.now(),
  })
  const quarantine = new KeyQuarantine(
    new WmbusQuarantineRepo(s.store.sql, {
      retentionMs: async (ws) =>
        ((await s.tenants.getWorkspace(ws))?.quarantine_retention_days ??
          s.config.QUARANTINE_RETENTION_DAYS) * 86_400_000,
      perMeter: s.config.QUARANTINE_PER_METER,
    }),
    () => s.clock.now(),
  )
  s.keyQuarantine = quarantine
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
  s.ingest = pipeline
  s.actors = actors
  // A recorded exchange or a backfill changes what the actor holds: it reloads.
  for (const channel of ['exchanges', 'readings-rewritten'])
    await s.coord.subscribe(channel, (msg) => actors.forget(Number(msg.split(':')[1])))
  return {
    name: 'ingest',
    actors,
    decoder,
    async stop() {
      await decoder.destroy()
    },
  }
}

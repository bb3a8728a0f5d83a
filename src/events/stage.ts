// Builds the events stage: the durable outbox that replaces the in-memory placeholder on
// the services, the delivery engine, and the owner mailer. Admin routes find it through
// `eventsOf(services)`.
import type { Services } from '../services.js'
import type { Stage } from '../stages.js'
import { DeliveringOutbox } from './delivering-outbox.js'
import { DeliveryEngine } from './engine.js'
import { Mailer } from './mailer.js'
import { EventRepo } from '../store/events.js'

export interface Events {
  repo: EventRepo
  outbox: DeliveringOutbox
  engine: DeliveryEngine
}

export async function buildEventsStage(s: Services): Promise<Stage> {
  const repo = new EventRepo(s.store)
  let engine: DeliveryEngine | null = null
  const outbox = new DeliveringOutbox(repo, s.clock, s.coord, () => engine?.wake())
  await outbox.listen()
  const mailer = new Mailer(repo, s.clock, s.log, s.config.SMTP_URL)
  engine = new DeliveryEngine(
    repo,
    s.tenants,
    mailer,
    s.coord,
    s.clock,
    s.log,
    {
      retryDelaysMs: s.config.EVENT_RETRY_DELAYS_MS,
      timeoutMs: s.config.EVENT_TIMEOUT_MS,
      disableAfter: s.config.EVENT_DISABLE_AFTER,
      blockPrivate: s.config.EVENT_BLOCK_PRIVATE_TARGETS,
    },
    () => outbox.invalidate(),
  )
  s.outbox = outbox
  s.events = { repo, outbox, engine } satisfies Events
  return engine
}

/** The events stage of a running app (set by buildEventsStage). */
export function eventsOf(s: Services): Events {
  const e = s.events
  if (!e) throw new Error('events stage not built')
  return e
}

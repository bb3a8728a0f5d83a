// The events part: the durable outbox every producer emits to, the delivery engine that
// posts to subscriptions, and the owner mailer.
import type { Base } from '../store/base.js'
import { DeliveringOutbox } from './delivering-outbox.js'
import { DeliveryEngine } from './engine.js'
import { Mailer } from './mailer.js'
import { EventRepo } from '../store/events.js'

export interface Events {
  repo: EventRepo
  outbox: DeliveringOutbox
  /** A lifecycle part: started with the app, stopped last of all. */
  engine: DeliveryEngine
}

export async function buildEvents(
  s: Pick<Base, 'store' | 'clock' | 'coord' | 'log' | 'config' | 'tenants'>,
): Promise<Events> {
  const repo = new EventRepo(s.store)
  let engine: DeliveryEngine | null = null
  const outbox = new DeliveringOutbox(repo, s.clock, s.coord, (rows) => engine?.accept(rows))
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
    (ws, id) => outbox.subscription(ws, id),
  )
  return { repo, outbox, engine }
}

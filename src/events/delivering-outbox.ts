// The durable outbox: `emit` writes one pending delivery per matching enabled subscription,
// with the envelope already serialised to the exact bytes that will be signed and sent.
// It resolves once the rows are stored, so a restart loses nothing; sending is the delivery
// engine's job and never runs on the emitter's path.
import type { Clock } from '../clock.js'
import type { Coord } from '../coord/coord.js'
import { Generations } from '../coord/generations.js'
import type { EventName } from './catalog.js'
import type { Outbox, OutboxEvent } from './outbox.js'
import type { Delivery, EventRepo, Subscription } from '../store/events.js'
import { uuid7 } from './uuid7.js'

/** Channel on which every instance drops its cached subscription lists. */
export const SUBSCRIPTIONS_CHANNEL = 'event-subscriptions'

export interface Envelope {
  id: string
  event: EventName
  occurred_at: string
  workspace: { id: number }
  data: Record<string, unknown>
}

export const wants = (sub: Pick<Subscription, 'events'>, event: string) =>
  sub.events.includes('*') || sub.events.includes(event)

export class DeliveringOutbox implements Outbox {
  // Subscriptions per workspace: ingest may emit on every request, so the list is cached and
  // dropped (here and, through the coordination channel, on every instance) on any change.
  private readonly cache = new Map<number, Promise<Subscription[]>>()
  // One shared generation for all subscriptions (changes are announced globally).
  private readonly generations: Generations

  constructor(
    private readonly repo: EventRepo,
    private readonly clock: Clock,
    private readonly coord: Coord,
    /** Given the rows once stored, so the engine sends them without a poll or a read. */
    private readonly onEmitted: (rows: readonly Delivery[]) => void = () => {},
  ) {
    this.generations = new Generations(coord, 'subscriptions')
  }

  async listen(): Promise<void> {
    await this.coord.subscribe(SUBSCRIPTIONS_CHANNEL, () => this.cache.clear())
  }

  /** Call after any subscription change. */
  async invalidate(): Promise<void> {
    this.cache.clear()
    await this.generations.bump('all')
    await this.coord.publish(SUBSCRIPTIONS_CHANNEL, 'changed').catch(() => {})
  }

  private async subscriptions(workspaceId: number): Promise<Subscription[]> {
    // Bounded staleness should an invalidation message be lost (coord/generations.ts).
    if (this.cache.size > 0 && (await this.generations.stale('all'))) this.cache.clear()
    if (this.cache.size === 0) await this.generations.loading('all')
    let p = this.cache.get(workspaceId)
    if (!p) {
      p = this.repo.listSubscriptions(workspaceId)
      this.cache.set(workspaceId, p)
      p.catch(() => this.cache.delete(workspaceId))
    }
    return p
  }

  /** One subscription from the cached list (the delivery engine reads it per attempt). */
  async subscription(workspaceId: number, id: number): Promise<Subscription | null> {
    return (await this.subscriptions(workspaceId)).find((s) => s.id === id) ?? null
  }

  async emit(workspaceId: number, event: EventName, data: Record<string, unknown>): Promise<void> {
    await this.emitMany(workspaceId, [{ event, data }])
  }

  async emitMany(workspaceId: number, events: readonly OutboxEvent[]): Promise<void> {
    if (events.length === 0) return
    const all = (await this.subscriptions(workspaceId)).filter((s) => s.enabled)
    if (all.length === 0) return
    const now = this.clock.now()
    const rows: Delivery[] = []
    for (const { event, data, occurredAt } of events) {
      const occurred_at = new Date(occurredAt ?? now).toISOString()
      for (const sub of all) {
        if (!wants(sub, event)) continue
        if (occurredAt !== undefined && sub.created_at > occurredAt) continue
        const id = uuid7(now)
        const envelope: Envelope = { id, event, occurred_at, workspace: { id: workspaceId }, data }
        rows.push({
          id,
          workspace_id: workspaceId,
          subscription_id: sub.id,
          event,
          body: JSON.stringify(envelope),
          status: 'pending',
          attempts: 0,
          last_status_code: null,
          last_error: null,
          next_attempt_at: now,
          exhausted: false,
          created_at: now,
          version: 0,
        })
      }
    }
    if (rows.length === 0) return
    await this.repo.saveDeliveries(rows)
    this.onEmitted(rows)
  }
}

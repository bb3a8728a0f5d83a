// The outbox every stage emits events into. `emit` resolves once the event is durable (a
// pending delivery row per matching subscription), so a restart loses nothing; delivery
// itself happens elsewhere and never delays the emitter.
import type { EventName } from './catalog.js'

export interface OutboxEvent {
  event: EventName
  data: Record<string, unknown>
  /**
   * When it happened, if earlier than now (an event recovered after a crash): it goes only
   * to subscriptions that existed by then. Default: now.
   */
  occurredAt?: number
}

export interface Outbox {
  emit(workspaceId: number, event: EventName, data: Record<string, unknown>): Promise<void>
  /**
   * Several events of one workspace stored in one write: a request that creates 500 meters
   * emits 500 `meter.created`, and one INSERT each made provisioning crawl.
   */
  emitMany(workspaceId: number, events: readonly OutboxEvent[]): Promise<void>
}

/** Keeps events in memory; used until the delivering outbox is wired in, and by unit tests. */
export class MemoryOutbox implements Outbox {
  readonly events: { workspaceId: number; event: EventName; data: Record<string, unknown> }[] = []
  async emit(workspaceId: number, event: EventName, data: Record<string, unknown>): Promise<void> {
    this.events.push({ workspaceId, event, data })
  }
  async emitMany(workspaceId: number, events: readonly OutboxEvent[]): Promise<void> {
    for (const e of events) this.events.push({ workspaceId, ...e })
  }
}

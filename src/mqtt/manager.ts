// Runs every enabled MQTT subscription on exactly one instance: per subscription a lease in
// the coordination store (the scheduler's mechanism; Redis with several instances). The
// holder renews it every third of its time and runs the connection; a dead holder's lease
// runs out and another instance takes the subscription over. Admin changes are announced on
// the `mqtt` channel so owners restart changed subscriptions at once.
import crypto from 'node:crypto'
import os from 'node:os'
import type { Logger } from 'pino'
import type { Coord } from '../coord/coord.js'
import type { MqttSubscriptionRepo } from '../store/mqtt-subscriptions.js'
import { compileMapping } from '../webhooks/mapping.js'
import { MqttSubscriber, type SubscriberDeps } from './subscriber.js'

export class MqttManager {
  readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`
  private readonly running = new Map<number, MqttSubscriber>()
  private timer: NodeJS.Timeout | null = null
  private syncing: Promise<void> | null = null
  private again = false
  private stopped = false

  constructor(
    private readonly repo: MqttSubscriptionRepo,
    private readonly coord: Coord,
    private readonly leaseMs: number,
    private readonly deps: SubscriberDeps,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.coord.subscribe('mqtt', () => void this.sync())
    this.timer = setInterval(() => void this.sync(), Math.max(100, Math.floor(this.leaseMs / 3)))
    this.timer.unref()
    await this.sync()
  }

  /** Subscriptions this instance runs now (tests, metrics). */
  owned(): MqttSubscriber[] {
    return [...this.running.values()]
  }

  /** One pass: take, renew or give up leases and match the running connections to them. */
  sync(): Promise<void> {
    if (this.syncing) {
      this.again = true
      return this.syncing
    }
    this.syncing = this.pass()
      .catch((err: unknown) => this.log.error({ err }, 'mqtt subscription sync failed'))
      .finally(() => {
        this.syncing = null
        if (this.again && !this.stopped) {
          this.again = false
          void this.sync()
        }
      })
    return this.syncing
  }

  private async pass(): Promise<void> {
    if (this.stopped) return
    const wanted = (await this.repo.list()).filter((s) => s.enabled)
    const ids = new Set(wanted.map((s) => s.id))
    for (const [id, sub] of this.running)
      if (!ids.has(id)) {
        this.running.delete(id)
        await sub.stop()
        await this.coord.release(`mqtt:${id}`, this.owner)
      }
    for (const s of wanted) {
      if (this.stopped) return
      const held = await this.coord.lease(`mqtt:${s.id}`, this.owner, this.leaseMs)
      const cur = this.running.get(s.id)
      if (!held) {
        if (cur) {
          this.log.warn({ mqtt: s.id }, 'mqtt subscription lease lost; stopping here')
          this.running.delete(s.id)
          await cur.stop()
        }
        continue
      }
      if (cur && cur.sub.version === s.version) {
        cur.touch()
        continue
      }
      // Filters dropped by an edit stay in the broker's persistent session unless unsubscribed.
      const dropped = cur ? cur.sub.topics.filter((t) => !s.topics.includes(t)) : []
      if (cur) {
        this.running.delete(s.id)
        await cur.stop()
      }
      let mapping
      try {
        mapping = compileMapping(s.mapping)
      } catch (err) {
        // Checked when saved; a stored mapping that no longer compiles is not run.
        this.log.error({ err, mqtt: s.id }, 'mqtt subscription mapping does not compile')
        continue
      }
      const next = new MqttSubscriber(s, mapping, this.owner, this.deps, dropped)
      // Registered once started: a start that failed (store or Redis down) is retried next pass.
      await next.start()
      this.running.set(s.id, next)
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    await this.syncing
    for (const [id, sub] of this.running) {
      await sub.stop()
      await this.coord.release(`mqtt:${id}`, this.owner).catch(() => {})
    }
    this.running.clear()
  }
}

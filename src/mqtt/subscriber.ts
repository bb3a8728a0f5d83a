// One MQTT subscription's connection: a persistent session (clean=false, MQTT 3.1.1, a
// stable client id), reconnect with exponential backoff, and QoS 1 messages acknowledged
// only after their readings are stored (mqtt.js handleMessage): a crash before the ack
// makes the broker deliver the message again, and the pipeline answers it as duplicates.
// A message whose storage failed is not acked; the connection is dropped so the broker
// redelivers it after the backoff (MQTT redelivers unacked messages on reconnect only).
import mqtt, { type MqttClient } from 'mqtt'
import type { Logger } from 'pino'
import type { Ingest } from '../ingest/types.js'
import type { MqttSubscription } from '../store/mqtt-subscriptions.js'
import type { DeliveryLimits } from '../webhooks/map-delivery.js'
import type { CompiledMapping } from '../webhooks/mapping.js'
import { handleMessage, type MessageOutcome } from './handle-message.js'
import type { MqttStatus, MqttStatusStore } from './status.js'

export interface SubscriberDeps {
  ingest: Ingest
  status: MqttStatusStore
  log: Logger
  now: () => number
  limits: DeliveryLimits
  /** Called per message (metrics). */
  onOutcome?: (o: MessageOutcome) => void
}

const BACKOFF_MIN_MS = 500
const BACKOFF_MAX_MS = 30_000

export class MqttSubscriber {
  private client: MqttClient | null = null
  private status!: MqttStatus
  private attempt = 0
  private timer: NodeJS.Timeout | null = null
  private stopped = false
  /** Messages are handled one at a time, in arrival order (QoS 0 ones too). */
  private work: Promise<void> = Promise.resolve()
  private writing: Promise<void> = Promise.resolve()

  constructor(
    readonly sub: MqttSubscription,
    private readonly mapping: CompiledMapping,
    private readonly owner: string,
    private readonly deps: SubscriberDeps,
    /** Filters of the previous version of this subscription, unsubscribed on connect. */
    private readonly dropped: string[] = [],
  ) {}

  async start(): Promise<void> {
    this.status = await this.deps.status.load(this.sub.id)
    this.status.owner = this.owner
    this.status.connected = false
    this.save()
    this.connect()
  }

  get connected(): boolean {
    return this.status?.connected ?? false
  }

  /** Rewrites the status record (lease renewal keeps it fresh). */
  touch(): void {
    this.save()
  }

  private save(): void {
    const snapshot = structuredClone(this.status)
    this.writing = this.writing
      .then(() => this.deps.status.write(this.sub.id, snapshot))
      .catch((err: unknown) =>
        this.deps.log.warn({ err, mqtt: this.sub.id }, 'mqtt status write failed'),
      )
  }

  private iso(): string {
    return new Date(this.deps.now()).toISOString()
  }

  private recordError(message: string): void {
    this.status.last_error = { message, at: this.iso() }
    this.save()
  }

  private connect(): void {
    const s = this.sub
    const c = mqtt.connect(s.broker_url, {
      clientId: s.client_id,
      clean: false,
      protocolVersion: 4,
      username: s.username ?? undefined,
      password: s.password ?? undefined,
      // Reconnects are ours (with backoff), not mqtt.js's fixed period.
      reconnectPeriod: 0,
      connectTimeout: 10_000,
    })
    // mqtt.js sends the PUBACK of a QoS 1 message only when handleMessage calls back, and
    // takes the next packet only then (so messages are handled one at a time, in order).
    c.handleMessage = (packet, callback) => {
      const payload =
        typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload
      this.enqueue(packet.topic, payload, (ack) => {
        if (ack) return callback()
        callback(new Error('message not stored; left unacknowledged for redelivery'))
        this.bounce()
      })
    }
    this.client = c
    c.on('connect', () => {
      this.attempt = 0
      if (this.dropped.length) c.unsubscribe(this.dropped)
      // Subscribing again on a present session is harmless and picks up changed filters.
      c.subscribe(s.topics, { qos: s.qos }, (err, granted) => {
        const refused = granted?.filter((g) => g.qos === 128).map((g) => g.topic) ?? []
        if (err || refused.length) {
          this.recordError(
            err ? `subscribe failed: ${err.message}` : `subscribe refused: ${refused.join(', ')}`,
          )
          return
        }
        // Connected = the broker has taken the subscription, so publishing now is stored.
        this.status.connected = true
        this.status.connected_at = this.iso()
        this.save()
        this.deps.log.info({ mqtt: s.id }, 'mqtt subscription connected')
      })
    })
    c.on('error', (err) => this.recordError(err.message))
    c.on('close', () => {
      if (this.status.connected) {
        this.status.connected = false
        this.save()
      }
      this.scheduleReconnect()
    })
  }

  private enqueue(topic: string, payload: Buffer, acked: (ack: boolean) => void): void {
    this.work = this.work.then(async () => {
      const o = await handleMessage(
        this.deps.ingest,
        this.sub.workspace_id,
        this.mapping,
        payload,
        this.deps.limits,
      )
      this.account(topic, o)
      acked(o.ack)
    })
    // One message's unexpected failure must not stall the ones after it: leave it unacked
    // and reconnect, so the broker delivers it again.
    this.work = this.work.catch((err: unknown) => {
      this.deps.log.error({ err, mqtt: this.sub.id }, 'mqtt message handling failed')
      this.recordError(err instanceof Error ? err.message : String(err))
      this.bounce()
    })
  }

  private account(topic: string, o: MessageOutcome): void {
    const st = this.status
    const at = this.iso()
    st.counts.messages++
    st.counts.readings_created += o.created
    st.counts.readings_duplicate += o.duplicates
    st.counts.readings_rejected += o.rejected
    st.counts.unmappable += o.unmappable
    if (!o.ack) st.counts.failed++
    st.last_message_at = at
    if (o.unmappableReason) st.last_unmappable = { reason: o.unmappableReason, topic, at }
    if (o.error) st.last_error = { message: o.error, at }
    this.save()
    this.deps.onOutcome?.(o)
  }

  /** Drops the connection so the broker redelivers what was not acknowledged. */
  private bounce(): void {
    this.client?.stream?.destroy()
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.timer) return
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt)
    this.attempt++
    const delay = base / 2 + Math.random() * (base / 2)
    this.timer = setTimeout(() => {
      this.timer = null
      if (this.stopped) return
      this.status.reconnects++
      this.save()
      this.client?.reconnect()
    }, delay)
  }

  /** Finishes the message in hand (acked if stored), then disconnects, keeping the session. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.work.catch(() => {})
    await this.client?.endAsync().catch(() => {})
    this.status.connected = false
    this.status.owner = null
    this.save()
    await this.writing
  }
}

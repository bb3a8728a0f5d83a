// MQTT ingest subscriptions (docs/mqtt.md): versioned rows in `mqtt_subscriptions`, read
// with FINAL. The password is stored as given and never leaves this repository through the
// API (views drop it); see docs/mqtt.md for what that means for backups.
import { chTime, isoFromCh } from './sql.js'
import type { Store } from './store.js'

export interface MqttSubscription {
  id: number
  workspace_id: number
  name: string | null
  broker_url: string
  username: string | null
  password: string | null
  /** MQTT client id: stable per subscription, so the broker keeps its persistent session. */
  client_id: string
  topics: string[]
  qos: 0 | 1
  /** The JSONata mapping definition (webhook mapping format), preset already expanded. */
  mapping: unknown
  enabled: boolean
  created_at: string
  /** Row version: a changed subscription is restarted by its owner. */
  version: number
}

function fromRow(r: Record<string, any>): MqttSubscription {
  return {
    id: Number(r.id),
    workspace_id: Number(r.workspace_id),
    name: r.name,
    broker_url: r.broker_url,
    username: r.username,
    password: r.password,
    client_id: r.client_id,
    topics: r.topics,
    qos: Number(r.qos) === 1 ? 1 : 0,
    mapping: JSON.parse(r.mapping) as unknown,
    enabled: Number(r.enabled) === 1,
    created_at: isoFromCh(r.created_at)!,
    version: Number(r.version),
  }
}

export class MqttSubscriptionRepo {
  constructor(private readonly store: Store) {}

  /** Subscriptions of one workspace, or of every workspace (the subscriber manager). */
  async list(ws?: number): Promise<MqttSubscription[]> {
    const rows = await this.store.sql.query(
      `SELECT * FROM mqtt_subscriptions FINAL WHERE deleted = 0
       ${ws !== undefined ? 'AND workspace_id = {ws:UInt64}' : ''} ORDER BY id`,
      ws !== undefined ? { ws } : undefined,
    )
    return rows.map(fromRow)
  }

  async get(id: number): Promise<MqttSubscription | null> {
    const [r] = await this.store.sql.query(
      'SELECT * FROM mqtt_subscriptions FINAL WHERE id = {id:UInt64} AND deleted = 0 LIMIT 1',
      { id },
    )
    return r ? fromRow(r) : null
  }

  async nextId(): Promise<number> {
    return this.store.nextId('mqtt_subscriptions')
  }

  async save(sub: Omit<MqttSubscription, 'version'>, deleted = false): Promise<MqttSubscription> {
    const version = await this.store.sharedVersion()
    await this.store.sql.insert(
      'mqtt_subscriptions',
      JSON.stringify({
        ...sub,
        mapping: JSON.stringify(sub.mapping),
        enabled: sub.enabled ? 1 : 0,
        deleted: deleted ? 1 : 0,
        created_at: chTime(new Date(sub.created_at)),
        version,
      }),
    )
    return { ...sub, version }
  }
}

// Status of MQTT subscriptions, readable from any instance: the owning instance keeps one
// record per subscription in the coordination store (Redis with several instances) and
// rewrites it on every change and lease renewal. Counters live in the record and are carried
// on by the next owner after a takeover. A record not refreshed within the lease time
// belongs to a dead owner and reads as disconnected.
import type { Coord } from '../coord/coord.js'

export const COUNTERS = [
  'messages',
  'readings_created',
  'readings_duplicate',
  'readings_rejected',
  'unmappable',
  'failed',
] as const
export type MqttCounter = (typeof COUNTERS)[number]

export interface MqttStatus {
  connected: boolean
  /** Instance (host:pid:id) holding the subscription's lease; null when none does. */
  owner: string | null
  connected_at: string | null
  last_message_at: string | null
  last_error: { message: string; at: string } | null
  last_unmappable: { reason: string; topic: string; at: string } | null
  reconnects: number
  counts: Record<MqttCounter, number>
  /** When the owner last wrote this record (ms); internal. */
  updated_at?: number
}

/** Records outlive a dead owner this long so counters survive a long outage. */
const RECORD_TTL_MS = 30 * 86_400_000
const key = (id: number) => `mqtt:status:${id}`

export const emptyStatus = (): MqttStatus => ({
  connected: false,
  owner: null,
  connected_at: null,
  last_message_at: null,
  last_error: null,
  last_unmappable: null,
  reconnects: 0,
  counts: Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<MqttCounter, number>,
})

export class MqttStatusStore {
  constructor(
    private readonly coord: Coord,
    private readonly leaseMs: number,
    private readonly now: () => number,
  ) {}

  async write(id: number, s: MqttStatus): Promise<void> {
    await this.coord.set(key(id), JSON.stringify({ ...s, updated_at: this.now() }), RECORD_TTL_MS)
  }

  /** The stored record as its owner left it (counters included), or an empty one. */
  async load(id: number): Promise<MqttStatus> {
    const raw = await this.coord.get(key(id))
    return raw ? { ...emptyStatus(), ...(JSON.parse(raw) as MqttStatus) } : emptyStatus()
  }

  /** As the admin API shows it: a record its owner stopped refreshing is disconnected. */
  async read(id: number): Promise<MqttStatus> {
    const s = await this.load(id)
    const fresh = s.updated_at !== undefined && this.now() - s.updated_at <= this.leaseMs
    const rest = { ...s }
    delete rest.updated_at
    return fresh ? rest : { ...rest, connected: false, owner: null }
  }
}

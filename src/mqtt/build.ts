// The MQTT ingest part: subscription repository, status store, the subscriber manager
// (leases, one connection per subscription across instances) and its /metrics series.
// Admin routes are in src/admin/mqtt.ts.
import { Counter } from 'prom-client'
import type { Ingest } from '../ingest/types.js'
import type { Part } from '../lifecycle.js'
import type { Metrics } from '../observability/metrics.js'
import type { Base } from '../store/base.js'
import { MqttSubscriptionRepo } from '../store/mqtt-subscriptions.js'
import { MqttManager } from './manager.js'
import { MqttStatusStore } from './status.js'

export interface MqttService {
  repo: MqttSubscriptionRepo
  status: MqttStatusStore
  /** Null when MQTT_SUBSCRIBERS=off on this instance. */
  manager: MqttManager | null
  /** Tells every instance's manager that subscriptions changed. */
  changed(): Promise<void>
}

export function buildMqtt(
  s: Pick<Base, 'config' | 'log' | 'clock' | 'coord' | 'store'> & {
    ingest: Ingest
    metrics: Metrics
  },
): MqttService & Part {
  const leaseMs = s.config.MQTT_LEASE_S * 1000
  const repo = new MqttSubscriptionRepo(s.store)
  const status = new MqttStatusStore(s.coord, leaseMs, () => s.clock.now())
  const messages = new Counter({
    name: 'meterflow_mqtt_messages_total',
    help: 'MQTT messages handled by this instance: stored (some reading created), duplicate (only duplicates), unmappable (no item mapped), rejected (refused per item or by validation), failed (not stored, left unacknowledged for redelivery).',
    labelNames: ['outcome'] as const,
    registers: [s.metrics.registry],
  })
  const manager =
    s.config.MQTT_SUBSCRIBERS === 'on'
      ? new MqttManager(
          repo,
          s.coord,
          leaseMs,
          {
            ingest: s.ingest,
            status,
            log: s.log,
            now: () => s.clock.now(),
            limits: {
              maxItems: s.config.MAX_BATCH_ITEMS,
              budgetMs: s.config.WEBHOOK_MAPPING_BUDGET_MS,
            },
            onOutcome: (o) => {
              const outcome = !o.ack
                ? 'failed'
                : o.created
                  ? 'stored'
                  : o.duplicates
                    ? 'duplicate'
                    : o.rejected
                      ? 'rejected'
                      : 'unmappable'
              messages.inc({ outcome })
            },
          },
          s.log,
        )
      : null
  if (manager)
    s.metrics.gauge(
      'meterflow_mqtt_subscriptions',
      'MQTT subscriptions run by this instance, by connection state (connected, disconnected).',
      (set) => {
        const owned = manager.owned()
        const up = owned.filter((x) => x.connected).length
        set(up, { state: 'connected' })
        set(owned.length - up, { state: 'disconnected' })
      },
      ['state'],
    )
  return {
    name: 'mqtt',
    repo,
    status,
    manager,
    changed: async () => {
      await s.coord.publish('mqtt', 'changed').catch(() => {})
      // The in-process coordination store may not deliver to its own publisher.
      void manager?.sync()
    },
    start: () => manager?.start(),
    stop: () => manager?.stop(),
  }
}

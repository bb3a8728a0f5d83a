// The MQTT ingest stage: subscription repository, status store, the subscriber manager
// (leases, one connection per subscription across instances) and its /metrics series.
// Admin routes are in src/admin/mqtt.ts.
import { Counter } from 'prom-client'
import type { Services } from '../services.js'
import type { Stage } from '../stages.js'
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

export function buildMqttStage(s: Services): Stage {
  const leaseMs = s.config.MQTT_LEASE_S * 1000
  const repo = new MqttSubscriptionRepo(s.store)
  const status = new MqttStatusStore(s.coord, leaseMs, () => s.clock.now())
  let messages: Counter<'outcome'> | null = null
  if (s.metrics) {
    messages = new Counter({
      name: 'meterflow_mqtt_messages_total',
      help: 'MQTT messages handled by this instance: stored (some reading created), duplicate (only duplicates), unmappable (no item mapped), rejected (refused per item or by validation), failed (not stored, left unacknowledged for redelivery).',
      labelNames: ['outcome'] as const,
      registers: [s.metrics.registry],
    })
  }
  const manager =
    s.config.MQTT_SUBSCRIBERS === 'on'
      ? new MqttManager(
          repo,
          s.coord,
          leaseMs,
          {
            // Looked up per message: the ingest stage (or a test) may replace it.
            ingest: { ingest: (r) => s.ingest.ingest(r) },
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
              messages?.inc({ outcome })
            },
          },
          s.log,
        )
      : null
  if (s.metrics && manager)
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
  s.mqtt = {
    repo,
    status,
    manager,
    changed: async () => {
      await s.coord.publish('mqtt', 'changed').catch(() => {})
      // The in-process coordination store may not deliver to its own publisher.
      void manager?.sync()
    },
  }
  return {
    name: 'mqtt',
    start: () => manager?.start(),
    stop: () => manager?.stop(),
  }
}

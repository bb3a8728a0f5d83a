// One MQTT message through the mapping and the ordinary ingest path. The answer says
// whether the message may be acknowledged: everything that will never get better by
// redelivery (stored, duplicate, unmappable, refused by validation) is acked; a transient
// failure (storage or coordination down) is not, so the broker delivers it again.
import { ApiError } from '../errors.js'
import type { Ingest } from '../ingest/types.js'
import { mapDelivery, type DeliveryLimits } from '../webhooks/map-delivery.js'
import { missingField, type CompiledMapping } from '../webhooks/mapping.js'

export interface MessageOutcome {
  ack: boolean
  created: number
  duplicates: number
  rejected: number
  unmappable: number
  /** Why the whole message was refused (unmappable body, 422) or failed (not acked). */
  error?: string
  /** The first unmappable item's reason. */
  unmappableReason?: string
}

/** The message body: JSON when it parses, else the payload as text (raw telegrams). */
export function messageBody(payload: Buffer): unknown {
  const text = payload.toString('utf8')
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text.trim()
  }
}

export async function handleMessage(
  ingest: Ingest,
  workspaceId: number,
  mapping: CompiledMapping,
  payload: Buffer,
  /** As for a webhook delivery: item cap and mapping time budget (webhooks/map-delivery.ts). */
  limits: DeliveryLimits,
): Promise<MessageOutcome> {
  const out: MessageOutcome = { ack: true, created: 0, duplicates: 0, rejected: 0, unmappable: 0 }
  const body = messageBody(payload)
  const toIngest: Record<string, unknown>[] = []
  try {
    for (const mapped of await mapDelivery(mapping, body, limits)) {
      const miss = missingField(mapped)
      if (miss) {
        out.unmappable++
        out.unmappableReason ??= miss.reason
      } else toIngest.push(mapped)
    }
  } catch (err) {
    // The mapping does not fit the message at all (or it is over the item cap or the
    // mapping budget): the whole message is unmappable; redelivery would not change that.
    out.unmappable++
    out.unmappableReason = describe(err)
    out.error = out.unmappableReason
    return out
  }
  if (!toIngest.length) return out
  try {
    const r = await ingest.ingest({ workspaceId, items: toIngest, source: 'mqtt' })
    for (const res of r.results)
      if (res.status === 'created') out.created++
      else if (res.status === 'duplicate') out.duplicates++
      else out.rejected++
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) {
      // A profile or schema violation: nothing stored, and redelivery would not change it.
      out.rejected += toIngest.length
      out.error = describe(err)
    } else {
      out.ack = false
      out.error = describe(err)
    }
  }
  return out
}

function describe(err: unknown): string {
  if (err instanceof ApiError) {
    const fields = Object.entries(err.errors ?? {})
      .map(([k, v]) => `${k}: ${v.join(' ')}`)
      .join('; ')
    return fields ? `${err.message} ${fields}` : err.message
  }
  return err instanceof Error ? err.message : String(err)
}

// POST /api/v1/webhooks/{endpoint}: foreign JSON mapped onto reportData items by the
// endpoint's JSONata mapping, then the ordinary ingest path (api-v1.md, operator-api.md
// "Webhook ingest endpoints"). Authentication is the endpoint's own token; an unknown
// endpoint, a wrong token and a disabled endpoint all give the same 401 body.
import crypto from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { ApiError, apiError, type FieldErrors } from '../errors.js'
import type { Router } from '../http/router.js'
import { json, type HttpRequest } from '../http/types.js'
import type { ItemStatus } from '../ingest/types.js'
import { RejectionTally } from '../ingest/rejections.js'
import type { ApiDeps } from './deps.js'
import { ReportResult } from './report.js'
import { mapDelivery } from '../webhooks/map-delivery.js'
import { missingField } from '../webhooks/mapping.js'
import { hashWebhookToken } from '../webhooks/repo.js'

/** operator-api.md: 120 requests per minute per IP. */
export const WEBHOOK_RATE_PER_MINUTE = 120

export interface WebhookResult {
  index: number
  status: ItemStatus
  reason?: string
  meter: string | null
  kind: string | null
  recorded_at: string | null
}

function webhookToken(req: HttpRequest): string | null {
  const h = req.headers['authorization']
  if (h) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
    if (m) return m[1]!
  }
  const x = req.headers['x-webhook-token']
  return x ? x.trim() : null
}

const str = (v: unknown) => (typeof v === 'string' ? v : null)

export function registerWebhookIngest(
  router: Router,
  s: Pick<ApiDeps, 'config' | 'coord' | 'ingest' | 'log' | 'outbox' | 'webhooks'>,
): void {
  router.route({
    method: 'POST',
    path: '/api/v1/webhooks/:endpoint',
    summary: 'Webhook ingest: foreign JSON mapped onto readings by the endpoint mapping',
    auth: 'webhook',
    body: Type.Unknown(),
    bodyByHand: true,
    response: ReportResult,
    // The endpoint's token is checked here, after the per-IP rate limit.
    handler: async (req) => {
      const rl = await s.coord.take(`rl:webhook-ip:${req.ip}`, WEBHOOK_RATE_PER_MINUTE, 60_000)
      req.responseHeaders['x-ratelimit-limit'] = String(WEBHOOK_RATE_PER_MINUTE)
      req.responseHeaders['x-ratelimit-remaining'] = String(
        Math.max(0, WEBHOOK_RATE_PER_MINUTE - rl.count),
      )
      if (!rl.ok) {
        req.responseHeaders['retry-after'] = String(Math.ceil(rl.resetMs / 1000))
        throw apiError(
          'RateLimited',
          `Rate limit of ${WEBHOOK_RATE_PER_MINUTE} requests per minute per IP exceeded.`,
        )
      }

      const id = req.params.endpoint ?? ''
      const token = webhookToken(req)
      const ep = id.length <= 64 ? await s.webhooks.get(id) : null
      // Hash and compare even when the endpoint is unknown, so all three 401s look alike.
      const given = Buffer.from(hashWebhookToken(token ?? ''), 'hex')
      const expected = Buffer.from(ep?.token_hash ?? hashWebhookToken(crypto.randomUUID()), 'hex')
      const tokenOk = token !== null && crypto.timingSafeEqual(given, expected)
      if (!ep || !tokenOk || !ep.enabled) throw apiError('Unauthenticated')
      req.workspaceId = ep.workspace_id

      const body = req.json()
      const mapping = s.webhooks.mapping(ep)
      // Item cap before any field is mapped; the whole mapping bounded in time.
      const items = await mapDelivery(mapping, body, {
        maxItems: s.config.MAX_BATCH_ITEMS,
        budgetMs: s.config.WEBHOOK_MAPPING_BUDGET_MS,
      })

      const results: (WebhookResult | null)[] = new Array(items.length).fill(null)
      const toIngest: unknown[] = []
      const ingestIndex: number[] = []
      for (let i = 0; i < items.length; i++) {
        const mapped = items[i]!
        const miss = missingField(mapped)
        if (miss) {
          results[i] = {
            index: i,
            status: 'rejected_unmappable',
            reason: miss.reason,
            meter: str(mapped.meter),
            kind: str(mapped.kind),
            recorded_at: str(mapped.recorded_at),
          }
        } else {
          toIngest.push(mapped)
          ingestIndex.push(i)
        }
      }

      let accepted = 0
      let rejected = results.filter((r) => r !== null).length
      if (toIngest.length) {
        // A profile violation throws the pipeline's 422: nothing of the delivery is stored.
        const out = await s.ingest
          .ingest({
            workspaceId: ep.workspace_id,
            items: toIngest,
            source: 'webhook',
            errorPrefix: 'items',
          })
          .catch((err: unknown) => {
            throw err instanceof ApiError && err.errors ? reindex(err, ingestIndex) : err
          })
        out.results.forEach((r, j) => {
          const index = ingestIndex[j]!
          const res: WebhookResult = {
            index,
            status: r.status,
            meter: r.meter,
            kind: r.kind,
            recorded_at: r.recorded_at,
          }
          if (r.reason !== undefined) res.reason = r.reason
          results[index] = res
          if (r.status === 'created' || r.status === 'duplicate') accepted++
          else rejected++
        })
      }
      const delivered = results.filter((r): r is WebhookResult => r !== null)
      // One reading.rejected per delivery, unmappable items included (api-v1.md, Events).
      const tally = new RejectionTally()
      tally.add(delivered)
      if (tally.total > 0)
        await s.outbox
          .emit(ep.workspace_id, 'reading.rejected', { ...tally.summary('webhook') })
          .catch((err) => s.log.error({ err }, 'could not emit reading.rejected'))
      const message = accepted === 0 ? refusedMessage(delivered) : undefined
      return json(200, {
        accepted,
        rejected,
        ...(message !== undefined ? { message } : {}),
        results: delivered,
      })
    },
  })
}

/**
 * `message` of a delivery of which nothing was accepted (api-v1.md: only when the whole
 * delivery was refused, naming what did not fit): the count per status and the first
 * reasons with their item index. A delivery that mapped to no item at all says so.
 */
export function refusedMessage(results: readonly WebhookResult[]): string | undefined {
  if (results.length === 0) return 'The mapping found no reading in the delivery.'
  if (!results.every((r) => r.status.startsWith('rejected_'))) return undefined
  const counts = new Map<string, number>()
  for (const r of results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1)
  const byStatus = [...counts].map(([st, n]) => `${n} ${st}`).join(', ')
  const reasons = results
    .filter((r) => r.reason)
    .slice(0, 3)
    .map((r) => `items.${r.index}: ${r.reason}`)
  return `Every reading of the delivery was refused (${byStatus})${reasons.length ? `: ${reasons.join('; ')}` : ''}.`
}

/** The pipeline keys errors by position in what it was given; name the delivery's item index. */
function reindex(err: ApiError, ingestIndex: number[]): ApiError {
  const errors: FieldErrors = {}
  const fix = (k: string) =>
    k.replace(/\bitems\.(\d+)/g, (_, j: string) => `items.${ingestIndex[Number(j)] ?? j}`)
  for (const [k, v] of Object.entries(err.errors ?? {})) errors[fix(k)] = v
  return new ApiError(err.code, fix(err.message), errors, err.extra)
}

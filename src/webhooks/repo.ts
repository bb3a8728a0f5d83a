// Webhook ingest endpoints (rows: src/store/webhook-endpoints.ts). The ingest path reads
// them through a short cache; compiled mappings are kept per (id, version), so a
// mapping is compiled once per version and never per delivery. Changes invalidate the
// caches of every instance through coord pub/sub.
import crypto from 'node:crypto'
import type { Coord } from '../coord/coord.js'
import { RefreshAhead } from '../coord/refresh-ahead.js'
import type { Store } from '../store/store.js'
import { WebhookEndpointStore, type WebhookEndpointRow } from '../store/webhook-endpoints.js'
import { compileMapping, type CompiledMapping, type MappingDef } from './mapping.js'

export interface WebhookEndpoint {
  id: string
  workspace_id: number
  name: string | null
  token_hash: string
  enabled: boolean
  mapping: MappingDef
  created_at: string
  version: number
}

const CACHE_MS = 2000

const parsed = (r: WebhookEndpointRow): WebhookEndpoint => ({
  ...r,
  mapping: JSON.parse(r.mapping) as MappingDef,
})

export const hashWebhookToken = (t: string) =>
  crypto.createHash('sha256').update(`webhook:${t}`).digest('hex')
export const newEndpointId = () => crypto.randomBytes(18).toString('base64url')
export const newWebhookToken = () => `mfwh_${crypto.randomBytes(24).toString('base64url')}`

export class WebhookRepo {
  private readonly cache: RefreshAhead<string, WebhookEndpoint | null>
  private readonly compiled = new Map<string, { version: number; mapping: CompiledMapping }>()

  private readonly rows: WebhookEndpointStore

  constructor(
    store: Store,
    private readonly coord: Coord,
    now: () => number,
  ) {
    this.rows = new WebhookEndpointStore(store)
    this.cache = new RefreshAhead(
      async (id) => {
        const r = await this.rows.get(id)
        return r ? parsed(r) : null
      },
      CACHE_MS,
      now,
    )
  }

  async init(): Promise<void> {
    await this.coord.subscribe('webhooks', (id) => this.cache.delete(id))
  }

  get(id: string): Promise<WebhookEndpoint | null> {
    return this.cache.get(id)
  }

  async list(ws: number): Promise<WebhookEndpoint[]> {
    return (await this.rows.list(ws)).map(parsed)
  }

  async save(ep: Omit<WebhookEndpoint, 'version'>): Promise<WebhookEndpoint> {
    const version = await this.rows.save({ ...ep, mapping: JSON.stringify(ep.mapping) })
    const saved = { ...ep, version }
    this.cache.set(ep.id, saved)
    await this.coord.publish('webhooks', ep.id).catch(() => {})
    return saved
  }

  /** The compiled mapping of this endpoint version (compiled on first use of the version). */
  mapping(ep: WebhookEndpoint): CompiledMapping {
    const c = this.compiled.get(ep.id)
    if (c && c.version === ep.version) return c.mapping
    const mapping = compileMapping(ep.mapping)
    this.compiled.set(ep.id, { version: ep.version, mapping })
    return mapping
  }
}

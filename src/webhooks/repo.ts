// Webhook ingest endpoints: versioned rows in `webhook_endpoints` (ORDER BY id). The ingest
// path reads them through a short cache; compiled mappings are kept per (id, version), so a
// mapping is compiled once per version and never per delivery. Changes invalidate the
// caches of every instance through coord pub/sub.
import crypto from 'node:crypto'
import type { Coord } from '../coord/coord.js'
import { chTime, isoFromCh } from '../store/sql.js'
import type { Store } from '../store/store.js'
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

export const hashWebhookToken = (t: string) =>
  crypto.createHash('sha256').update(`webhook:${t}`).digest('hex')
export const newEndpointId = () => crypto.randomBytes(18).toString('base64url')
export const newWebhookToken = () => `mfwh_${crypto.randomBytes(24).toString('base64url')}`

export class WebhookRepo {
  private readonly cache = new Map<string, { ep: WebhookEndpoint | null; at: number }>()
  private readonly compiled = new Map<string, { version: number; mapping: CompiledMapping }>()

  constructor(
    private readonly store: Store,
    private readonly coord: Coord,
    private readonly now: () => number,
  ) {}

  async init(): Promise<void> {
    await this.coord.subscribe('webhooks', (id) => this.cache.delete(id))
  }

  private fromRow(r: Record<string, any>): WebhookEndpoint {
    return {
      id: r.id,
      workspace_id: Number(r.workspace_id),
      name: r.name,
      token_hash: r.token_hash,
      enabled: Number(r.enabled) === 1,
      mapping: JSON.parse(r.mapping) as MappingDef,
      created_at: isoFromCh(r.created_at)!,
      version: Number(r.version),
    }
  }

  async get(id: string): Promise<WebhookEndpoint | null> {
    const c = this.cache.get(id)
    if (c && this.now() - c.at < CACHE_MS) return c.ep
    const [r] = await this.store.sql.query(
      'SELECT * FROM webhook_endpoints FINAL WHERE id = {id:String} LIMIT 1',
      { id },
    )
    const ep = r ? this.fromRow(r) : null
    this.cache.set(id, { ep, at: this.now() })
    return ep
  }

  async list(ws: number): Promise<WebhookEndpoint[]> {
    const rows = await this.store.sql.query(
      'SELECT * FROM webhook_endpoints FINAL WHERE workspace_id = {ws:UInt64} ORDER BY created_at, id',
      { ws },
    )
    return rows.map((r) => this.fromRow(r))
  }

  async save(ep: Omit<WebhookEndpoint, 'version'>): Promise<WebhookEndpoint> {
    const version = await this.store.sharedVersion()
    await this.store.sql.insertJsonEachRow(
      'webhook_endpoints',
      JSON.stringify({
        ...ep,
        enabled: ep.enabled ? 1 : 0,
        mapping: JSON.stringify(ep.mapping),
        created_at: chTime(new Date(ep.created_at)),
        version,
      }),
    )
    const saved = { ...ep, version }
    this.cache.set(ep.id, { ep: saved, at: this.now() })
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

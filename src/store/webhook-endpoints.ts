// Webhook ingest endpoints as stored rows: versioned in `webhook_endpoints` (ORDER BY id).
// The mapping is kept as its JSON text; src/webhooks/repo.ts parses, caches and compiles it.
import { chTime, isoFromCh } from './sql.js'
import type { Store } from './store.js'

export interface WebhookEndpointRow {
  id: string
  workspace_id: number
  name: string | null
  token_hash: string
  enabled: boolean
  /** The mapping definition as JSON text. */
  mapping: string
  created_at: string
  version: number
}

function fromRow(r: Record<string, any>): WebhookEndpointRow {
  return {
    id: r.id,
    workspace_id: Number(r.workspace_id),
    name: r.name,
    token_hash: r.token_hash,
    enabled: Number(r.enabled) === 1,
    mapping: r.mapping,
    created_at: isoFromCh(r.created_at)!,
    version: Number(r.version),
  }
}

export class WebhookEndpointStore {
  constructor(private readonly store: Store) {}

  async get(id: string): Promise<WebhookEndpointRow | null> {
    const [r] = await this.store.sql.query(
      'SELECT * FROM webhook_endpoints FINAL WHERE id = {id:String} LIMIT 1',
      { id },
    )
    return r ? fromRow(r) : null
  }

  async list(ws: number): Promise<WebhookEndpointRow[]> {
    const rows = await this.store.sql.query(
      'SELECT * FROM webhook_endpoints FINAL WHERE workspace_id = {ws:UInt64} ORDER BY created_at, id',
      { ws },
    )
    return rows.map(fromRow)
  }

  /** Stores a new version of the endpoint; returns that version. */
  async save(ep: Omit<WebhookEndpointRow, 'version'>): Promise<number> {
    const version = await this.store.sharedVersion()
    await this.store.sql.insert(
      'webhook_endpoints',
      JSON.stringify({
        ...ep,
        enabled: ep.enabled ? 1 : 0,
        created_at: chTime(new Date(ep.created_at)),
        version,
      }),
    )
    return version
  }
}

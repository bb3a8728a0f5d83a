// Workspaces, users and API tokens. Rows are versioned (ReplacingMergeTree); reads use FINAL,
// which is cheap on these small tables and always returns the newest version.
import type { Coord } from '../coord/coord.js'
import { SharedCache } from '../coord/shared-cache.js'
import { chTime, isoFromCh, type Sql } from './sql.js'
import type { Store } from './store.js'

export interface Workspace {
  id: number
  name: string
  plan_meter_limit: number | null
  provision_cap_per_hour: number
  retention_days: number | null
  /** Days the wM-Bus key quarantine keeps telegrams; null: QUARANTINE_RETENTION_DAYS. */
  quarantine_retention_days: number | null
  created_at: string
}

export interface User {
  id: number
  workspace_id: number
  email: string
  owner: boolean
  permissions: string[]
}

export interface ApiToken {
  id: number
  workspace_id: number
  user_id: number
  name: string | null
  token_hash: string
  scopes: string[]
  expires_at: string | null
  rate_limit_per_minute: number
  revoked_at: string | null
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))

function workspaceFromRow(r: Record<string, any>): Workspace {
  return {
    id: Number(r.workspace_id),
    name: r.name,
    plan_meter_limit: num(r.plan_meter_limit),
    provision_cap_per_hour: Number(r.provision_cap_per_hour),
    retention_days: num(r.retention_days),
    quarantine_retention_days: num(r.quarantine_retention_days),
    created_at: isoFromCh(r.created_at)!,
  }
}

function userFromRow(r: Record<string, any>): User {
  return {
    id: Number(r.id),
    workspace_id: Number(r.workspace_id),
    email: r.email,
    owner: Number(r.owner) === 1,
    permissions: r.permissions,
  }
}

function tokenFromRow(r: Record<string, any>): ApiToken {
  return {
    id: Number(r.id),
    workspace_id: Number(r.workspace_id),
    user_id: Number(r.user_id),
    name: r.name,
    token_hash: r.token_hash,
    scopes: r.scopes,
    expires_at: isoFromCh(r.expires_at),
    rate_limit_per_minute: Number(r.rate_limit_per_minute),
    revoked_at: isoFromCh(r.revoked_at),
  }
}

export class TenantRepo {
  private readonly sql: Sql
  /**
   * Workspaces as the ingest path reads them (limits, caps, retention) on every request that
   * names a new meter: a FINAL look-up each took 30-100 ms under provisioning load.
   */
  private readonly workspaces: SharedCache<Workspace | null>

  constructor(
    private readonly store: Store,
    coord: Coord,
  ) {
    this.sql = store.sql
    this.workspaces = new SharedCache(coord, 'workspaces', (id) => this.getWorkspace(Number(id)))
  }

  async init(): Promise<void> {
    await this.workspaces.listen()
  }

  private async put(table: string, row: Record<string, unknown>): Promise<void> {
    await this.sql.insert(
      table,
      JSON.stringify({ ...row, version: await this.store.sharedVersion() }),
    )
  }

  async createWorkspace(w: Omit<Workspace, 'id' | 'created_at'>): Promise<Workspace> {
    const id = await this.store.nextId('workspaces')
    const created = chTime(Date.now())
    await this.put('workspaces', { workspace_id: id, ...w, created_at: created })
    await this.workspaces.changed(id)
    return { id, ...w, created_at: isoFromCh(created)! }
  }

  async saveWorkspace(w: Workspace): Promise<void> {
    const { id, created_at, ...rest } = w
    await this.put('workspaces', {
      workspace_id: id,
      ...rest,
      created_at: chTime(new Date(created_at)),
    })
    await this.workspaces.changed(id)
  }

  /** The workspace from the shared cache (read by ingest on every new meter). */
  async workspace(id: number): Promise<Workspace | null> {
    return this.workspaces.get(id)
  }

  async getWorkspace(id: number): Promise<Workspace | null> {
    const [r] = await this.sql.query(
      'SELECT * FROM workspaces FINAL WHERE workspace_id = {id:UInt64}',
      { id },
    )
    return r ? workspaceFromRow(r) : null
  }

  async listWorkspaces(): Promise<Workspace[]> {
    return (await this.sql.query('SELECT * FROM workspaces FINAL ORDER BY workspace_id')).map(
      workspaceFromRow,
    )
  }

  async createUser(u: Omit<User, 'id'>): Promise<User> {
    const id = await this.store.nextId('users')
    const user = { id, ...u }
    await this.saveUser(user)
    return user
  }

  async saveUser(u: User): Promise<void> {
    await this.put('users', { ...u, owner: u.owner ? 1 : 0, created_at: chTime(Date.now()) })
  }

  async getUser(id: number): Promise<User | null> {
    const [r] = await this.sql.query('SELECT * FROM users FINAL WHERE id = {id:UInt64}', { id })
    return r ? userFromRow(r) : null
  }

  async listUsers(workspaceId: number): Promise<User[]> {
    return (
      await this.sql.query(
        'SELECT * FROM users FINAL WHERE workspace_id = {ws:UInt64} ORDER BY id',
        {
          ws: workspaceId,
        },
      )
    ).map(userFromRow)
  }

  async createToken(t: Omit<ApiToken, 'id' | 'revoked_at'>): Promise<ApiToken> {
    const id = await this.store.nextId('api_tokens')
    const token: ApiToken = { id, ...t, revoked_at: null }
    await this.saveToken(token)
    return token
  }

  async saveToken(t: ApiToken): Promise<void> {
    await this.put('api_tokens', {
      ...t,
      expires_at: t.expires_at ? chTime(new Date(t.expires_at)) : null,
      revoked_at: t.revoked_at ? chTime(new Date(t.revoked_at)) : null,
      created_at: chTime(Date.now()),
    })
  }

  async getToken(id: number): Promise<ApiToken | null> {
    const [r] = await this.sql.query('SELECT * FROM api_tokens FINAL WHERE id = {id:UInt64}', {
      id,
    })
    return r ? tokenFromRow(r) : null
  }

  async findTokenByHash(hash: string): Promise<ApiToken | null> {
    const [r] = await this.sql.query(
      'SELECT * FROM api_tokens FINAL WHERE token_hash = {h:String} LIMIT 1',
      { h: hash },
    )
    return r ? tokenFromRow(r) : null
  }
}

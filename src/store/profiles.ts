// Device profiles: the built-in catalog plus workspace profiles (versioned: posting an
// existing key stores version + 1). Cached per workspace; creations invalidate everywhere.
import type { Coord } from '../coord/coord.js'
import { SharedCache } from '../coord/shared-cache.js'
import { chTime, type Sql } from './sql.js'

export interface Profile {
  key: string
  version: number
  name: string
  /** Reading kind of the object form (workspace profiles); null for built-ins. */
  kind: 'consumption' | 'saldo' | null
  unit: string | null
  /** Binary layout (operator-api.md `decoder`), when the payload is one encoded string. */
  decoder: unknown | null
  status_map: Record<string, string> | null
  builtin: boolean
}

export const BUILTIN_PROFILES: readonly Profile[] = [
  {
    key: 'generic',
    version: 1,
    name: 'Generic',
    kind: null,
    unit: null,
    decoder: null,
    status_map: null,
    builtin: true,
  },
  {
    key: 'wmbus_oms',
    version: 1,
    name: 'Wireless M-Bus / OMS',
    kind: 'saldo',
    unit: null,
    decoder: null,
    status_map: null,
    builtin: true,
  },
  {
    key: 'pulse_counter',
    version: 1,
    name: 'Pulse counter',
    kind: null,
    unit: null,
    decoder: null,
    status_map: null,
    builtin: true,
  },
]

export class ProfileRepo {
  /** Built-ins and the workspace's profiles per workspace, read on every ingest request. */
  private readonly cache: SharedCache<Profile[]>

  constructor(
    private readonly sql: Sql,
    private readonly coord: Coord,
  ) {
    this.cache = new SharedCache(coord, 'profiles', (ws) => this.load(Number(ws)))
  }

  async init(): Promise<void> {
    await this.cache.listen()
  }

  /** Built-ins first, then the workspace's profiles, every version. */
  all(ws: number): Promise<Profile[]> {
    return this.cache.get(ws)
  }

  private async load(ws: number): Promise<Profile[]> {
    const rows = await this.sql.query<Record<string, any>>(
      'SELECT * FROM profiles FINAL WHERE workspace_id = {ws:UInt64} ORDER BY key, version',
      { ws },
    )
    return [
      ...BUILTIN_PROFILES,
      ...rows.map((r) => ({
        key: r.key,
        version: Number(r.version),
        name: r.name,
        kind: r.kind,
        unit: r.unit,
        decoder: r.decoder ? JSON.parse(r.decoder) : null,
        status_map: r.status_map ? JSON.parse(r.status_map) : null,
        builtin: false,
      })),
    ]
  }

  /** The newest version of `key`, or the given version. */
  async get(ws: number, key: string, version?: number): Promise<Profile | null> {
    let best: Profile | null = null
    for (const p of await this.all(ws)) {
      if (p.key !== key) continue
      if (version !== undefined) {
        if (p.version === version) return p
      } else if (!best || p.version > best.version) best = p
    }
    return best
  }

  async create(ws: number, p: Omit<Profile, 'version' | 'builtin'>): Promise<Profile> {
    // The version comes from the coordination layer's sequence (Redis across instances), not
    // from reading the newest stored version: concurrent POSTs of one key would all read the
    // same one, and the ReplacingMergeTree would keep only the last of them.
    const version = await this.coord.nextId(`profile-version:${ws}:${p.key}`, async () => {
      const [r] = await this.sql.query<{ m: string | number }>(
        'SELECT toUInt64(max(version)) AS m FROM profiles WHERE workspace_id = {ws:UInt64} AND key = {key:String}',
        { ws, key: p.key },
      )
      return Number(r?.m ?? 0)
    })
    await this.sql.insert(
      'profiles',
      JSON.stringify({
        workspace_id: ws,
        key: p.key,
        version,
        name: p.name,
        kind: p.kind,
        unit: p.unit,
        decoder: p.decoder ? JSON.stringify(p.decoder) : null,
        status_map: p.status_map ? JSON.stringify(p.status_map) : null,
        created_at: chTime(Date.now()),
      }),
    )
    await this.cache.changed(ws)
    return { ...p, version, builtin: false }
  }
}

// Device profiles: the built-in catalog plus workspace profiles (versioned: posting an
// existing key stores version + 1). Cached per workspace; creations invalidate everywhere.
import type { Coord } from '../coord/coord.js'
import { Generations } from '../coord/generations.js'
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
  private readonly cache = new Map<number, Promise<Profile[]>>()
  private readonly generations: Generations

  constructor(
    private readonly sql: Sql,
    private readonly coord: Coord,
  ) {
    this.generations = new Generations(coord, 'profiles')
  }

  async init(): Promise<void> {
    await this.coord.subscribe('profiles', (ws) => this.cache.delete(Number(ws)))
  }

  /** Built-ins first, then the workspace's profiles, every version. */
  async all(ws: number): Promise<Profile[]> {
    // Bounded staleness should an invalidation message be lost (coord/generations.ts).
    if (this.cache.has(ws) && (await this.generations.stale(ws))) this.cache.delete(ws)
    let p = this.cache.get(ws)
    if (!p) {
      p = this.generations
        .loading(ws)
        .then(() =>
          this.sql.query<Record<string, any>>(
            'SELECT * FROM profiles FINAL WHERE workspace_id = {ws:UInt64} ORDER BY key, version',
            { ws },
          ),
        )
        .then((rows) => [
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
        ])
      this.cache.set(ws, p)
      p.catch(() => this.cache.delete(ws))
    }
    return p
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
    await this.sql.insertJsonEachRow(
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
    this.cache.delete(ws)
    await this.generations.bump(ws)
    await this.coord.publish('profiles', String(ws)).catch(() => {})
    return { ...p, version, builtin: false }
  }
}

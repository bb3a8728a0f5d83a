// Redis coordination. Every read-modify-write is one Lua script (redis-scripts.ts), so
// several instances agree without races. Keys carry a prefix so tests and tenants of one
// Redis stay apart.
import crypto from 'node:crypto'
import { Redis } from 'ioredis'
import { apiError } from '../errors.js'
import { publishTake } from './channel.js'
import { defineScripts, type Scripted } from './redis-scripts.js'
import {
  HEARTBEAT_LEASE_TTL_MS,
  NOTE_TTL_MS,
  parseClock,
  windowStart,
  type Coord,
  type LeaseBatch,
  type LeaseSpace,
  type TakeResult,
} from './coord.js'

export class RedisCoord implements Coord {
  readonly kind = 'redis' as const
  private readonly redis: Scripted
  private subscriber: Redis | null = null
  /** Every channel subscribed is acknowledged on the subscriber's current connection. */
  private listening = false
  private readonly handlers = new Map<string, ((m: string) => void)[]>()
  private readonly lastWindow = new Map<string, string>()

  constructor(
    private readonly url: string,
    /** Every key and channel starts with it (see `coordPrefix` in app.ts). */
    readonly prefix = 'mf:',
    private readonly now: () => number = Date.now,
  ) {
    // Fail fast instead of queueing commands forever while Redis is down: a write that needs
    // coordination answers 503 at once and recovers by itself when Redis is back.
    this.redis = defineScripts(
      new Redis(url, {
        keyPrefix: prefix,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        retryStrategy: (n) => Math.min(n * 200, 2000),
        lazyConnect: true,
        // Many meters' lock and version calls of one batch travel in one round trip.
        enableAutoPipelining: true,
      }),
    )
    this.redis.on('error', () => {})
  }

  async connect(): Promise<void> {
    await this.redis.connect()
  }

  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw apiError(
        'Unavailable',
        `Coordination store (Redis) unavailable: ${(err as Error).message}`,
      )
    }
  }

  take(key: string, limit: number, windowMs: number, by = 1): Promise<TakeResult> {
    return this.run(async () => {
      const now = this.now()
      const start = windowStart(now, windowMs)
      const k = `${key}:${start}`
      this.lastWindow.set(key, k)
      const [ok, count] = await this.redis.mfTake(k, limit, by, windowMs)
      return { ok: ok === 1, count: Number(count), resetMs: start + windowMs - now }
    }).then(
      (r) => {
        publishTake({ coord: this, key, by, ok: r.ok })
        return r
      },
      (err) => {
        publishTake({ coord: this, key, by, ok: null })
        throw err
      },
    )
  }

  giveBack(key: string, by: number): Promise<void> {
    const k = this.lastWindow.get(key)
    if (!k) return Promise.resolve()
    return this.run(async () => void (await this.redis.mfGiveBack(k, by)))
  }

  nextId(sequence: string, floor: () => Promise<number>): Promise<number> {
    return this.run(async () => {
      const id = Number(await this.redis.mfNextId(`seq:${sequence}`, -1))
      if (id >= 0) return id
      return Number(await this.redis.mfNextId(`seq:${sequence}`, await floor()))
    })
  }

  hlc(name: string, candidate: number): Promise<number> {
    // NEXT_ID with a floor: max(current, candidate) + 1, in one atomic step.
    return this.run(async () => Number(await this.redis.mfNextId(`hlc:${name}`, candidate)))
  }

  nextIds(sequence: string, count: number, floor: () => Promise<number>): Promise<number> {
    return this.run(async () => {
      let last = Number(await this.redis.mfNextId(`seq:${sequence}`, -1, count))
      if (last < 0)
        last = Number(await this.redis.mfNextId(`seq:${sequence}`, await floor(), count))
      return last - count + 1
    })
  }

  lease(name: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.run(async () => (await this.redis.mfLease(`lease:${name}`, owner, ttlMs)) === 1)
  }

  release(name: string, owner: string): Promise<void> {
    return this.run(async () => void (await this.redis.mfRelease(`lease:${name}`, owner)))
  }

  leaseMany(
    space: LeaseSpace,
    ids: readonly number[],
    owner: string,
    ttlMs: number,
  ): Promise<LeaseBatch> {
    if (ids.length === 0) return Promise.resolve({ values: [], clock: null })
    return this.run(async () => {
      const res = await this.redis.mfLeaseMany(
        this.prefix,
        space.lease,
        space.value,
        owner,
        ttlMs,
        ids.join(','),
        space.clock ?? '',
        crypto.randomUUID(),
        space.note ?? '',
        space.want ?? '',
        space.alive ?? '',
        HEARTBEAT_LEASE_TTL_MS,
      )
      const values = new Array<string | null>(ids.length)
      const notes = space.note ? new Array<string | null>(ids.length).fill(null) : null
      for (let i = 0; i < ids.length; i++) {
        const v = res[i]
        values[i] = v === null || v === undefined || (v as unknown) === false ? null : v
        const nl = notes ? (values[i]?.indexOf('\n') ?? -1) : -1
        if (nl >= 0) {
          notes![i] = values[i]!.slice(nl + 1)
          values[i] = values[i]!.slice(0, nl)
        }
      }
      const clock = space.clock ? parseClock(res[ids.length]) : null
      return notes ? { values, clock, notes } : { values, clock }
    })
  }

  heartbeat(space: LeaseSpace, owner: string, ttlMs: number): Promise<boolean> {
    if (!space.alive) return Promise.resolve(true)
    // ioredis adds the prefix (keyPrefix), as for every key not built in a script.
    const key = space.alive + owner
    return this.run(async () => (await this.redis.set(key, '1', 'PX', ttlMs, 'GET')) !== null)
  }

  releaseMany(
    space: LeaseSpace,
    ids: readonly number[],
    set: string | null,
    owner: string,
    raise?: number,
    notes?: readonly (string | null)[],
  ): Promise<void> {
    if (ids.length === 0) return Promise.resolve()
    // One argument for all notes (an argument each cost ioredis ~2.5 µs per meter).
    let text = ''
    if (space.note && set !== null && notes?.some(Boolean))
      for (let i = 0; i < ids.length; i++) text += `${notes[i] ?? ''}\x1e`
    return this.run(async () => {
      await this.redis.mfReleaseMany(
        this.prefix,
        space.lease,
        space.value,
        owner,
        set ?? '',
        ids.join(','),
        space.clock ?? '',
        raise === undefined ? '' : String(raise),
        ...(text ? [space.note!, NOTE_TTL_MS, text] : ['']),
      )
    })
  }

  claim(key: string, ttlMs: number): Promise<boolean> {
    return this.run(async () => (await this.redis.set(key, '1', 'PX', ttlMs, 'NX')) === 'OK')
  }

  claimValues(keys: string[], values: number[], ttlMs: number): Promise<(number | null)[]> {
    if (keys.length === 0) return Promise.resolve([])
    return this.run(async () => {
      // One script call: a pipeline of a SET NX and a GET per key cost ioredis ~8.5 us of
      // main-thread CPU a key (scratch, 500 keys a call), two command objects each.
      const res = await this.redis.mfClaimValues(keys.length, ...keys, ttlMs, ...values)
      return res.map((held) => (held === null || (held as unknown) === false ? null : Number(held)))
    })
  }

  releaseValues(keys: string[], values: number[]): Promise<void> {
    if (keys.length === 0) return Promise.resolve()
    return this.run(async () => {
      await this.redis.mfReleaseValues(keys.length, ...keys, ...values)
    })
  }

  unclaim(keys: string[]): Promise<void> {
    if (keys.length === 0) return Promise.resolve()
    return this.run(async () => void (await this.redis.del(...keys)))
  }

  get(key: string): Promise<string | null> {
    return this.run(() => this.redis.get(key))
  }

  incr(key: string): Promise<number> {
    return this.run(() => this.redis.incr(key))
  }

  set(key: string, value: string, ttlMs?: number): Promise<void> {
    return this.run(async () => {
      if (ttlMs) await this.redis.set(key, value, 'PX', ttlMs)
      else await this.redis.set(key, value)
    })
  }

  publish(channel: string, message: string): Promise<void> {
    return this.run(async () => void (await this.redis.publish(this.prefix + channel, message)))
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<void> {
    const sub = this.subscriberConnection()
    const full = this.prefix + channel
    if (!this.handlers.has(full)) {
      this.handlers.set(full, [])
      try {
        await sub.subscribe(full)
      } catch (err) {
        // Refused (or the connection went): a new connection subscribes every channel again.
        this.listening = false
        sub.disconnect(true)
        throw err
      }
    }
    this.handlers.get(full)!.push(handler)
  }

  hears(): boolean {
    return this.listening
  }

  /**
   * The server's eviction policy where it may evict keys with a TTL (a `maxmemory` set and a
   * `volatile-*` or `allkeys-*` policy, as some managed services default to), else null;
   * null too where CONFIG is not allowed. Leases, heartbeats and repeat claims all have a
   * TTL: a lease evicted is a meter two instances may work on at once.
   */
  async evictionRisk(): Promise<string | null> {
    try {
      const [, max] = (await this.redis.config('GET', 'maxmemory')) as string[]
      const [, policy] = (await this.redis.config('GET', 'maxmemory-policy')) as string[]
      return Number(max) > 0 && policy && policy !== 'noeviction' ? policy : null
    } catch {
      return null
    }
  }

  /**
   * The connection the subscriptions live on. Its channels are subscribed again on each new
   * connection here, not by ioredis (`autoResubscribe`), so that `hears` turns true only
   * once Redis has acknowledged them: a message published before that is lost.
   */
  private subscriberConnection(): Redis {
    if (this.subscriber) return this.subscriber
    const sub = new Redis(this.url, {
      retryStrategy: (n) => Math.min(n * 200, 2000),
      autoResubscribe: false,
    })
    sub.on('error', () => {})
    sub.on('message', (ch: string, msg: string) => {
      for (const h of this.handlers.get(ch) ?? []) h(msg)
    })
    sub.on('close', () => {
      this.listening = false
    })
    sub.on('ready', () => {
      const channels = [...this.handlers.keys()]
      ;(channels.length ? sub.subscribe(...channels) : Promise.resolve()).then(
        () => {
          this.listening = sub.status === 'ready'
        },
        // Refused (an ACL without SUBSCRIBE, a replica going away): connect again, later.
        () => sub.disconnect(true),
      )
    })
    return (this.subscriber = sub)
  }

  ping(): Promise<void> {
    return this.run(async () => void (await this.redis.ping()))
  }

  async close(): Promise<void> {
    this.redis.disconnect()
    this.subscriber?.disconnect()
  }
}

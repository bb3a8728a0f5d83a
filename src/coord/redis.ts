// Redis coordination. Every read-modify-write is one Lua script, so several instances
// agree without races. Keys carry a prefix so tests and tenants of one Redis stay apart.
import crypto from 'node:crypto'
import { Redis } from 'ioredis'
import { apiError } from '../errors.js'
import { publishTake } from './channel.js'
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

const TAKE = `
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local by = tonumber(ARGV[2])
if c + by > tonumber(ARGV[1]) then return {0, c} end
c = redis.call('INCRBY', KEYS[1], by)
if c == by then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, c}`

// ARGV[1] = -1: increment only if the sequence exists (else -1, and the caller asks the
// store for its maximum); otherwise the floor to start above. ARGV[2]: how many ids to
// reserve at once (default 1); returns the last of them.
const NEXT_ID = `
local c = redis.call('GET', KEYS[1])
local floor = tonumber(ARGV[1])
if not c then
  if floor < 0 then return -1 end
  redis.call('SET', KEYS[1], floor)
elseif tonumber(c) < floor then
  redis.call('SET', KEYS[1], floor)
end
return redis.call('INCRBY', KEYS[1], tonumber(ARGV[2] or '1'))`

const LEASE = `
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`

// Per-key commands of the numbered leases' scripts, many keys to a call: inside a script
// each redis.call costs about what its command does (its arguments and reply converted),
// and a lease cycle of one meter was seven of them. MGET, MSET and DEL take at most `BATCH`
// keys a call (Lua's unpack has a limit of a few thousand values).
const MANY = `
local BATCH = 1000
local function mget(keys)
  local out, n = {}, #keys
  for i = 1, n, BATCH do
    local r = redis.call('MGET', unpack(keys, i, math.min(i + BATCH - 1, n)))
    for j = 1, #r do out[i + j - 1] = r[j] end
  end
  return out
end
local function mset(keys, v)
  local n = #keys
  for i = 1, n, BATCH do
    local args, a = {}, 0
    for j = i, math.min(i + BATCH - 1, n) do
      args[a + 1], args[a + 2], a = keys[j], v, a + 2
    end
    redis.call('MSET', unpack(args))
  end
end
local function del(keys)
  local n = #keys
  for i = 1, n, BATCH do redis.call('DEL', unpack(keys, i, math.min(i + BATCH - 1, n))) end
end
local function prefixed(prefix, ids, which)
  local out = {}
  for j, i in ipairs(which) do out[j] = prefix .. ids[i] end
  return out
end`

// Numbered leases (Coord.leaseMany): ARGV = the key prefix and lease and companion spaces,
// owner, ttl, then the ids (distinct) as one comma-separated argument. The keys are built
// here, not sent: a key an argument each cost ioredis ~2.5 µs of the caller's CPU per meter
// and turn (its prefix, length and buffer per key), ~0.5 µs as one string (scratch, 500 ids
// a call). Redis 6.2 or later, standalone (or a primary with replicas): the keys are not
// declared in KEYS, as a Redis Cluster would need. Per id: false when held by another
// owner, else the companion's value ('' when unset). A refused owner is remembered (`want:`,
// 1 s) and the lease, once free, goes to it before anyone else: a holder that gives a busy
// meter back and asks again at once does not win every time. A lease newly taken marks its
// companion 'x' until the release writes it: a holder that dies after writing leaves 'x',
// which no reader takes for its own last value. A free lease costs one call of its own (SET
// NX); its want, companion and note are read and the companion marked for all ids at once
// (MANY). ARGV[7] names the space's clock ('' for none), read once per call and answered
// after the ids' values; missing, it starts as ARGV[8] (a new epoch) with 0. ARGV[9] the
// space's notes' prefix ('' = none): a lease newly taken answers its note after its value
// and a newline (values never hold one). ARGV[10] the space's want channels' prefix ('' =
// none): the ids refused because another owner holds them are published to
// `<prefix><want><holder>`, one message per holder. ARGV[11] the space's heartbeat prefix
// ('' = none), ARGV[12] the key ttl of a heartbeat owner's leases (LeaseSpace.alive): such an
// owner's call sets its heartbeat for the ttl, and a lease whose heartbeat owner's key is
// gone is taken as a free one (byte 126 is '~', HEARTBEAT_MARK).
const LEASE_MANY = `${MANY}
local p, owner, ttl = ARGV[1], ARGV[4], ARGV[5]
local lp, vp, wp = p .. 'lease:' .. ARGV[2], p .. ARGV[3], p .. 'want:' .. ARGV[2]
local np = ARGV[9] ~= '' and p .. ARGV[9]
local wc = ARGV[10] ~= '' and p .. ARGV[10]
local ap = ARGV[11] ~= '' and p .. ARGV[11]
local keyTtl = ttl
if ap and string.byte(owner) == 126 then
  redis.call('SET', ap .. owner, '1', 'PX', ttl)
  keyTtl = ARGV[12]
end
local ids, keys, out, n = {}, {}, {}, 0
local taken, refused = {}, {}
for id in string.gmatch(ARGV[6], '[^,]+') do
  n = n + 1
  ids[n], keys[n] = id, lp .. id
  if redis.call('SET', keys[n], owner, 'NX', 'PX', keyTtl) then
    taken[#taken + 1] = n
  else
    refused[#refused + 1] = n
  end
end
-- Held already: by this owner (renewed), by a dead heartbeat owner (taken), or by another.
local own, wanted, dead = {}, {}, {}
if #refused > 0 then
  local held = {}
  for j, i in ipairs(refused) do held[j] = keys[i] end
  held = mget(held)
  for j, i in ipairs(refused) do
    local cur = held[j]
    local gone = false
    if cur == owner then
      own[#own + 1] = i
    else
      if ap and cur and string.byte(cur) == 126 then
        gone = dead[cur]
        if gone == nil then
          gone = redis.call('EXISTS', ap .. cur) == 0
          dead[cur] = gone
        end
      end
      if gone then
        redis.call('SET', keys[i], owner, 'PX', keyTtl)
        taken[#taken + 1] = i
      else
        redis.call('SET', wp .. ids[i], owner, 'NX', 'PX', 1000)
        out[i] = false
        if wc and cur then wanted[cur] = wanted[cur] and (wanted[cur] .. ',' .. ids[i]) or ids[i] end
      end
    end
  end
end
if #own > 0 then
  for _, i in ipairs(own) do redis.call('PEXPIRE', keys[i], keyTtl) end
  local v = mget(prefixed(vp, ids, own))
  for j, i in ipairs(own) do out[i] = v[j] or '' end
end
if #taken > 0 then
  -- Taken: given back at once where another owner was refused it first.
  local wkeys = prefixed(wp, ids, taken)
  local w = mget(wkeys)
  local back, mine, got = {}, {}, {}
  for j, i in ipairs(taken) do
    if w[j] and w[j] ~= owner then
      back[#back + 1] = keys[i]
      out[i] = false
    else
      if w[j] then mine[#mine + 1] = wkeys[j] end
      got[#got + 1] = i
    end
  end
  if #back > 0 then del(back) end
  if #mine > 0 then del(mine) end
  if #got > 0 then
    local vkeys = prefixed(vp, ids, got)
    local v = mget(vkeys)
    mset(vkeys, 'x')
    local notes = np and mget(prefixed(np, ids, got))
    for j, i in ipairs(got) do
      out[i] = v[j] or ''
      if notes and notes[j] then out[i] = out[i] .. '\\n' .. notes[j] end
    end
  end
end
if wc then
  for holder, list in pairs(wanted) do redis.call('PUBLISH', wc .. holder, list) end
end
if ARGV[7] ~= '' then
  local ck = p .. ARGV[7]
  local c = redis.call('GET', ck)
  if not c then
    c = ARGV[8] .. ':0'
    redis.call('SET', ck, c)
  end
  out[n + 1] = c
end
return out`

// ARGV as LEASE_MANY's, the ttl's place taken by the companions' new value ('' = leave);
// ARGV[7] the clock's name and ARGV[8] the number to raise it to ('' = neither). A clock
// missing here (the store lost it) is left for the next LEASE_MANY to start. ARGV[9] the
// notes' prefix ('' = none), ARGV[10] their ttl, ARGV[11] a note per id in order, each
// ended by the byte 30 (an empty one: none): kept only beside a value written. The leases
// are read, their companions written and the leases deleted for all ids at once (MANY).
const RELEASE_MANY = `${MANY}
local p, owner, set = ARGV[1], ARGV[4], ARGV[5]
local lp, vp = p .. 'lease:' .. ARGV[2], p .. ARGV[3]
local np = ARGV[9] ~= '' and set ~= '' and p .. ARGV[9]
local notes = np and string.gmatch(ARGV[11], '([^\\30]*)\\30')
local ids, keys, noted, n = {}, {}, {}, 0
for id in string.gmatch(ARGV[6], '[^,]+') do
  n = n + 1
  ids[n], keys[n] = id, lp .. id
  noted[n] = notes and notes()
end
local held = mget(keys)
local mine, vkeys = {}, {}
for i = 1, n do
  if held[i] == owner then
    mine[#mine + 1] = keys[i]
    if set ~= '' then vkeys[#vkeys + 1] = vp .. ids[i] end
    local note = noted[i]
    if note and note ~= '' then redis.call('SET', np .. ids[i], note, 'PX', ARGV[10]) end
  end
end
if #vkeys > 0 then mset(vkeys, set) end
if #mine > 0 then del(mine) end
if ARGV[7] ~= '' and ARGV[8] ~= '' then
  local ck = p .. ARGV[7]
  local c = redis.call('GET', ck)
  if c then
    local epoch, max = string.match(c, '^(.*):(%d+)$')
    if epoch and tonumber(ARGV[8]) > tonumber(max) then
      redis.call('SET', ck, epoch .. ':' .. ARGV[8])
    end
  end
end
return 1`

// KEYS = the keys to claim; ARGV = ttl, then a value per key. Per key: false when this call
// set it, else the value it holds.
const CLAIM_VALUES = `
local out = {}
for i = 1, #KEYS do
  if redis.call('SET', KEYS[i], ARGV[i + 1], 'NX', 'PX', ARGV[1]) then
    out[i] = false
  else
    out[i] = redis.call('GET', KEYS[i]) or false
  end
end
return out`

const RELEASE_VALUES = `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then redis.call('DEL', KEYS[i]) end
end
return 1`

const GIVE_BACK = `
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if c > 0 then redis.call('DECRBY', KEYS[1], math.min(c, tonumber(ARGV[1]))) end
return 1`

type Scripted = Redis & {
  mfTake(key: string, limit: number, by: number, ttl: number): Promise<[number, number]>
  mfNextId(key: string, floor: number, count?: number): Promise<number>
  mfLease(key: string, owner: string, ttl: number): Promise<number>
  mfRelease(key: string, owner: string): Promise<number>
  mfGiveBack(key: string, by: number): Promise<number>
  mfLeaseMany(...args: (string | number)[]): Promise<(string | null)[]>
  mfReleaseMany(...args: (string | number)[]): Promise<number>
  mfClaimValues(...args: (string | number)[]): Promise<(string | null)[]>
  mfReleaseValues(...args: (string | number)[]): Promise<number>
}

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
    this.redis = new Redis(url, {
      keyPrefix: prefix,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      retryStrategy: (n) => Math.min(n * 200, 2000),
      lazyConnect: true,
      // Many meters' lock and version calls of one batch travel in one round trip.
      enableAutoPipelining: true,
    }) as Scripted
    this.redis.on('error', () => {})
    this.redis.defineCommand('mfTake', { numberOfKeys: 1, lua: TAKE })
    this.redis.defineCommand('mfNextId', { numberOfKeys: 1, lua: NEXT_ID })
    this.redis.defineCommand('mfLease', { numberOfKeys: 1, lua: LEASE })
    this.redis.defineCommand('mfRelease', { numberOfKeys: 1, lua: RELEASE })
    this.redis.defineCommand('mfGiveBack', { numberOfKeys: 1, lua: GIVE_BACK })
    this.redis.defineCommand('mfLeaseMany', { numberOfKeys: 0, lua: LEASE_MANY })
    this.redis.defineCommand('mfReleaseMany', { numberOfKeys: 0, lua: RELEASE_MANY })
    this.redis.defineCommand('mfClaimValues', { lua: CLAIM_VALUES })
    this.redis.defineCommand('mfReleaseValues', { lua: RELEASE_VALUES })
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

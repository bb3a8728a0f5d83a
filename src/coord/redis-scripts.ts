// The Lua scripts RedisCoord runs (redis.ts): every read-modify-write is one script, so
// several instances agree without races, and the scripts over many keys (a batch's meter
// leases) cost one round trip and one pass of Redis's event loop for all of them.
import type { Redis } from 'ioredis'

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

/** `redis` with the scripts defined as commands (`defineScripts`). */
export type Scripted = Redis & {
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

/** Defines every script as a command of `redis` (ioredis runs it by its SHA, and sends its text where Redis lacks it). */
export function defineScripts(redis: Redis): Scripted {
  redis.defineCommand('mfTake', { numberOfKeys: 1, lua: TAKE })
  redis.defineCommand('mfNextId', { numberOfKeys: 1, lua: NEXT_ID })
  redis.defineCommand('mfLease', { numberOfKeys: 1, lua: LEASE })
  redis.defineCommand('mfRelease', { numberOfKeys: 1, lua: RELEASE })
  redis.defineCommand('mfGiveBack', { numberOfKeys: 1, lua: GIVE_BACK })
  redis.defineCommand('mfLeaseMany', { numberOfKeys: 0, lua: LEASE_MANY })
  redis.defineCommand('mfReleaseMany', { numberOfKeys: 0, lua: RELEASE_MANY })
  redis.defineCommand('mfClaimValues', { lua: CLAIM_VALUES })
  redis.defineCommand('mfReleaseValues', { lua: RELEASE_VALUES })
  return redis as Scripted
}

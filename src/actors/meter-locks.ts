// Per-meter ordering across instances sharing Redis: a meter's turn runs under a lease,
// and every turn leaves a fresh stamp: a row version above every row it wrote (the
// store's version clock, `StampClock`) and the epoch of the shared clock below. The
// releases raise a clock all instances share (`meter-clock` in Redis) to their stamps, and
// every instance that takes leases moves its version clock past that clock: so every row
// written after a stamp, by any instance, has a higher version than the stamp. An actor
// whose last stamp is not the current one therefore catches up on the rows versioned after
// its own (`LockedMeter.since`, MeterActor.catchUp): a meter changing instances costs what
// the other one wrote, not a reload of its window (which, with two instances taking turns
// on the same meters, was all their ingest did). Where the stamp says less (a holder died
// or failed mid-turn and left 'x', Redis lost its keys and the clock started a new epoch, a
// stamp of an older release) the actor reloads from ClickHouse.
// The meters of a batch of turns take and give back their leases together, one script
// call each way, and the turns whose leases came back run as one batch (a turn per meter,
// with its own promises, body and INSERT piece, ran the Redis gateway bench at 8,200
// readings/s against 190,000 in-process).
// A lease outlives its turn: the meter's next turn here takes it over without Redis. A lease
// nobody else asked for is kept until its meter has been idle for `keepMs`
// (METER_LEASE_KEEP_S, 20 minutes: a gateway or head-end pushing, a replay, an import, and
// the meters of a deployment that report every 15 minutes: one lease cycle for many turns,
// where a cycle per turn cost Redis ~16 µs of CPU per reading, more than the ingest's own
// main thread spent on it). Another instance refused a lease tells its holder
// (`LeaseSpace.want`, a message on the holder's channel, sent again at every refusal); from
// then the lease outlives its turn by a few milliseconds only (`lingerMs`), for the next
// turn when requests overlap on the same meters, and the meter is kept for at most
// `maxHoldMs` from when its lease was taken; then it goes back, and Redis gives it to the
// instance that asked first (Coord.leaseMany), so a meter busy here is still had elsewhere
// in turn. A meter nobody asked for goes back after `keepMs` too, busy or not. While this
// instance does not hear its channel (the subscriber's connection down: `Coord.hears`)
// those messages are lost, and `keepMs` is `unheardKeepMs` (5 s): a refusal nobody hears
// waits that long at most.
// The leases live by the instance's heartbeat (LeaseSpace.alive): every third of the TTL
// it is set again, so another instance never takes a meter while its turn still runs here
// however long the turn, and the thousands of leases a busy fleet keeps cost nothing to
// keep (each renewed every third of the TTL was ~17 % of the fleet's rate, a script call
// per 2,000). The TTL (10 s) bounds what an instance's death costs the others: the meters
// it kept are taken over once its heartbeat lapses (with 30 s, every meter a killed
// instance had used in its last 5 s stalled its next requests 30 s). A heartbeat found
// lapsed here (the event loop stalled, Redis unreachable for a TTL) means others may have
// taken some of these meters: every lease held goes back as soon as its turn allows, and
// none is taken over without Redis again. A turn checks that itself before it takes a kept
// lease over: after a stall the heartbeat's own answer could come after the turn began, and
// kept leases now live for minutes. So does a lease whose key's renewal was refused (another
// instance holds it) or failed for most of the key's life.
import crypto from 'node:crypto'
import type { LockedMeter, LockEntry, LockOutcome, MeterLocks } from './meter-actor.js'
import { apiError } from '../errors.js'
import {
  HEARTBEAT_LEASE_TTL_MS,
  HEARTBEAT_MARK,
  type Coord,
  type LeaseBatch,
  type LeaseSpace,
} from '../coord/coord.js'
import { NOTE_MAX_CHARS } from './handover-note.js'

/** Lease `lease:meter:<id>`, stamp `mstamp:<id>` (the key names every instance agrees on). */
const METERS: LeaseSpace = {
  lease: 'meter:',
  value: 'mstamp:',
  clock: 'meter-clock',
  note: 'mnote:',
  want: 'mwant:',
  alive: 'malive:',
}

/**
 * Where stamps come from: the store's row versions (Store: µs since the epoch, monotonic
 * here, moved past versions seen elsewhere by `observeVersion`).
 */
export interface StampClock {
  version(): number
  observeVersion(v: number): void
}

/**
 * Leases renewed or given back per script call: one script over thousands of leases would
 * hold Redis up for everyone meanwhile.
 */
const CALL_CHUNK = 2_000

/**
 * How long after its last renewal a lease's key is still trusted to be this instance's: it
 * lives `HEARTBEAT_LEASE_TTL_MS` from then, renewed after half of that.
 */
const KEY_TRUSTED_MS = HEARTBEAT_LEASE_TTL_MS * 0.9

/** A stamp as written: `<version>@<epoch of the shared clock>`. */
const stampOf = (version: number, epoch: string) => `${version}@${epoch}`

/** A stamp's version and epoch; null for 'x', '' and the plain numbers of older releases. */
function parseStamp(stamp: string): { version: number; epoch: string } | null {
  const at = stamp.indexOf('@')
  if (at <= 0) return null
  const version = Number(stamp.slice(0, at))
  return Number.isSafeInteger(version) ? { version, epoch: stamp.slice(at + 1) } : null
}

/**
 * The version to catch up from, where `seen` and `stamp` are of one epoch of the shared
 * clock and `stamp` came after `seen`: every row versioned above `seen` was written since.
 */
function catchUpFrom(seen: string | null, stamp: string): number | null {
  if (seen === null) return null
  const a = parseStamp(seen)
  const b = parseStamp(stamp)
  return a && b && a.epoch === b.epoch && b.version > a.version ? a.version : null
}

/**
 * The rows of a hand-over note (`<stamp found>\n<stamp left>\n<lines>`, written by
 * `release`) where it is the whole difference between `seen` and `stamp`: the hold that
 * left it took the meter at `seen` and left `stamp`. Null otherwise.
 */
function noteFor(
  seen: string | null,
  stamp: string,
  note: string | null | undefined,
): string | null {
  if (!note || seen === null) return null
  const a = note.indexOf('\n')
  const b = note.indexOf('\n', a + 1)
  if (a < 0 || b < 0) return null
  return note.slice(0, a) === seen && note.slice(a + 1, b) === stamp ? note.slice(b + 1) : null
}

/** The hand-over note a hold leaves with `stamp` (read by `noteFor`); null where it has none. */
function noteOf(h: Hold | undefined, stamp: string | null): string | null {
  return stamp !== null && h?.lines ? `${h.found}\n${stamp}\n${h.lines.join('\n')}` : null
}

/** A monotonic µs clock of this process: stamps without a store (the lease tests). */
function localClock(): StampClock {
  let last = 0
  return {
    version: () => (last = Math.max(Date.now() * 1000, last + 1)),
    observeVersion: (v) => void (last = Math.max(last, v)),
  }
}

export interface MeterLockOptions {
  ttlMs?: number
  /** How long a turn waits for meters another instance holds before it fails (503). */
  waitMs?: number
  /** How long a lease another instance asked for outlives its turn, for the meter's next turn here. */
  lingerMs?: number
  /** How long a meter another instance asked for is kept here at most from when its lease was taken. */
  maxHoldMs?: number
  /**
   * How long a lease nobody else asked for is kept for the meter's next turn here after its
   * last one, and how long such a meter is kept at most from when its lease was taken.
   */
  keepMs?: number
  /** `keepMs` while this instance does not hear the refusals of others (`Coord.hears`). */
  unheardKeepMs?: number
  /** How long after its last renewal a held lease's key is renewed (half its life in Redis). */
  keyRenewMs?: number
  /**
   * Most leases held here at once; past it, idle ones go back, the longest held first. A
   * first contact of millions of meters, or an import, would otherwise keep a record here
   * and a key in Redis for every one of them for `keepMs`.
   */
  maxHeld?: number
  /** Must be the store's version clock wherever actors catch up on stamps (build.ts). */
  clock?: StampClock
}

/** A lease this instance holds. */
interface Hold {
  /** When it was taken from Redis. */
  since: number
  /** The stamp of the last turn that wrote, not yet in Redis (written when the lease goes). */
  stamp: string | null
  /** The shared clock's epoch when the lease was taken (its stamps carry it). */
  epoch: string
  /** No turn runs on it: the next one here may take it over. */
  idle: boolean
  /** When its last turn here ended. */
  idleSince: number
  /**
   * Another instance was refused it, or it came from another instance (or is new to its
   * actor): it goes back as soon as `lingerMs`/`maxHoldMs` allow.
   */
  wanted: boolean
  /** When its key in Redis was last given its full ttl (`HEARTBEAT_LEASE_TTL_MS`). */
  renewed: number
  /**
   * Another instance may have had it since its last turn here (this instance's heartbeat
   * may have lapsed, or its key's renewal was refused or overdue): no turn here takes it
   * over without Redis again, and it goes back as soon as `lingerMs` allows.
   */
  broken: boolean
  /** The stamp found when it was taken: where the hand-over note starts. */
  found: string
  /** Per turn ended here, its line of the hand-over note; null: no note (a line missing, or too long). */
  lines: string[] | null
  chars: number
}

export class CoordMeterLocks implements MeterLocks {
  private readonly owner = HEARTBEAT_MARK + crypto.randomUUID()
  /** Leases held here (in a turn or lingering), renewed by `renewTimer`. */
  private readonly held = new Map<number, Hold>()
  private renewTimer: NodeJS.Timeout | null = null
  private renewing = false
  /**
   * When a call last set this instance's heartbeat (its start: the key lives at least the
   * ttl from then), as long as every such call came within the ttl of the one before.
   */
  private aliveAt = 0
  private lingerTimer: NodeJS.Timeout | null = null
  private keepTimer: NodeJS.Timeout | null = null
  /** When the keep sweep last read the holds (`keepThenRelease`). */
  private sweptAt = 0
  /** When the heartbeat last read the holds for keys to renew (`beat`). */
  private renewScanAt = 0
  private closed = false

  private readonly ttlMs: number
  private readonly waitMs: number
  private readonly lingerMs: number
  private readonly maxHoldMs: number
  private readonly keepMs: number
  private readonly unheardKeepMs: number
  private readonly keyRenewMs: number
  private readonly maxHeld: number
  private trimming = false
  private readonly clock: StampClock

  constructor(
    private readonly coord: Coord,
    o: MeterLockOptions = {},
  ) {
    this.ttlMs = o.ttlMs ?? 10_000
    this.waitMs = o.waitMs ?? 30_000
    this.lingerMs = o.lingerMs ?? 10
    this.maxHoldMs = o.maxHoldMs ?? 100
    this.keepMs = o.keepMs ?? 1_200_000
    this.unheardKeepMs = Math.min(this.keepMs, o.unheardKeepMs ?? 5_000)
    this.keyRenewMs = Math.min(o.keyRenewMs ?? HEARTBEAT_LEASE_TTL_MS / 2, KEY_TRUSTED_MS)
    this.maxHeld = o.maxHeld ?? 400_000
    this.clock = o.clock ?? localClock()
    // Until subscribed (or with Redis's subscriber down) a refusal goes unheard here: the
    // meter then goes back after `unheardKeepMs`.
    coord.subscribe(METERS.want + this.owner, (ids) => this.wantedElsewhere(ids)).catch(() => {})
  }

  /** Another instance was refused these meters (comma-separated ids). */
  private wantedElsewhere(ids: string): void {
    let idle = false
    for (const id of ids.split(',')) {
      const h = this.held.get(Number(id))
      if (!h || h.wanted) continue
      h.wanted = true
      idle ||= h.idle
    }
    if (idle) this.lingerThenRelease()
  }

  async withLocks(
    entries: readonly LockEntry[],
    fn: (locked: LockedMeter[]) => Promise<void>,
  ): Promise<LockOutcome[]> {
    const out = new Array<LockOutcome>(entries.length)
    const started = Date.now()
    // The heartbeat may have lapsed since it was last set (the event loop stalled, Redis out
    // of reach): another instance may have taken any kept lease meanwhile. Checked here, not
    // left to the next heartbeat, whose answer could come after this turn took them over.
    if (started - this.aliveAt >= this.ttlMs) this.lapsed()
    // Leases lingering here after an earlier turn: taken over, nothing asked of Redis.
    let locked: LockedMeter[] = []
    let pending: number[] = []
    // Idle leases that may have been another's meanwhile: asked of Redis again, as if not
    // held (so no sweep gives them back meanwhile); given back if that fails.
    let broken: number[] | null = null
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      const h = this.held.get(e.meterId)
      if (!h?.idle) {
        pending.push(i)
        continue
      }
      if (h.broken) {
        this.held.delete(e.meterId)
        ;(broken ??= []).push(e.meterId)
        pending.push(i)
        continue
      }
      h.idle = false
      // Its last turn here wrote the stamp this actor saw, unless the actor is a new one.
      locked.push({
        index: i,
        changed: e.seen !== h.stamp,
        untouched: false,
        since: null,
        note: null,
        noting: h.lines !== null,
      })
    }
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      const waiting: number[] = []
      if (pending.length) {
        const ids = pending.map((i) => entries[i]!.meterId)
        const asked = Date.now()
        let batch: LeaseBatch
        try {
          batch = await this.coord.leaseMany(METERS, ids, this.owner, this.ttlMs)
          this.setAlive(asked)
          // Each is held anew now, or another's.
          broken = null
        } catch (error) {
          if (broken) void this.release(broken)
          for (const i of pending) out[i] = { error }
          // The leases taken over stay held; their stamps are written when they go.
          const now = Date.now()
          for (const l of locked) {
            out[l.index] = { error }
            this.idleFrom(this.held.get(entries[l.index]!.meterId)!, now)
          }
          return out
        }
        const now = Date.now()
        // Rows written from here on come after every stamp released so far, anywhere.
        const epoch = batch.clock?.epoch ?? ''
        if (batch.clock) this.clock.observeVersion(batch.clock.max)
        pending.forEach((i, k) => {
          const stamp = batch.values[k] ?? null
          if (stamp === null) return void waiting.push(i)
          const seen = entries[i]!.seen
          const changed = stamp === '' || seen !== stamp
          const since = changed ? catchUpFrom(seen, stamp) : null
          const note = since !== null ? noteFor(seen, stamp, batch.notes?.[k]) : null
          // A meter that came from another instance (or is new to its actor after a
          // restart) is likely to be asked back: it goes back as it did before leases were
          // kept (two instances taking turns on the same meters lost ~8 % to the refusal
          // each hold waited for). A meter no instance ever held (no stamp) is kept like
          // one that stays: a fleet's first contact took every lease twice.
          const wanted = changed && stamp !== ''
          this.held.set(entries[i]!.meterId, {
            since: now,
            stamp: null,
            epoch,
            idle: false,
            idleSince: now,
            renewed: now,
            broken: false,
            wanted,
            found: stamp,
            // A note only of a meter likely to go back. One that stays here costs no note
            // (its lines would pile up for as long as it is kept).
            lines: wanted ? [] : null,
            chars: 0,
          })
          locked.push({ index: i, changed, untouched: stamp === '', since, note, noting: wanted })
        })
      }
      if (locked.length) {
        this.renewWhileHeld()
        await this.run(entries, locked, fn, out)
      }
      if (waiting.length === 0) return out
      pending = waiting
      locked = []
      if (Date.now() - started > this.waitMs) {
        for (const i of pending)
          out[i] = {
            error: apiError(
              'Unavailable',
              `Meter ${entries[i]!.meterId} is busy on another instance; retry.`,
            ),
          }
        return out
      }
      await new Promise((r) => setTimeout(r, delay))
    }
  }

  /**
   * `fn` for meters whose leases are ours. After it, a lease is kept for the meter's next
   * turn here (`keepMs`, or `lingerMs` once another instance asked for it), unless the meter
   * was kept long enough, the turn failed or the locks close: then it goes back now.
   */
  private async run(
    entries: readonly LockEntry[],
    locked: LockedMeter[],
    fn: (locked: LockedMeter[]) => Promise<void>,
    out: LockOutcome[],
  ): Promise<void> {
    let failed = false
    try {
      await fn(locked)
    } catch (error) {
      failed = true
      for (const l of locked) out[l.index] = { error }
    }
    // The meters written together share a fresh version: above every row the batch wrote,
    // and unique here. A failed turn may have written some of its rows: it writes no stamp,
    // and the 'x' its lease was taken with stays (every actor reads the meter again).
    const version = failed ? null : this.clock.version()
    const now = Date.now()
    const keep = this.keepFor()
    const release: number[] = []
    // One stamp string per epoch (nearly always one per batch), not one per meter: the
    // release groups meters by it.
    let stamp = null as { epoch: string; text: string } | null
    for (const l of locked) {
      const e = entries[l.index]!
      const id = e.meterId
      const h = this.held.get(id)!
      if (h.lines !== null) {
        const line = failed ? null : (e.note?.() ?? null)
        if (line === null || (h.chars += line.length + 1) > NOTE_MAX_CHARS) h.lines = null
        else h.lines.push(line)
      }
      if (version !== null && stamp?.epoch !== h.epoch)
        stamp = { epoch: h.epoch, text: stampOf(version, h.epoch) }
      h.stamp = version === null ? null : stamp!.text
      if (h.stamp !== null) out[l.index] = { seen: h.stamp }
      if (failed || this.closed || now - h.since >= (h.wanted ? this.maxHoldMs : keep))
        release.push(id)
      else this.idleFrom(h, now)
    }
    // Sent now, so it reaches Redis before any next turn here asks for the same meters (one
    // connection, in order); not awaited: a holder that dies before it lands leaves 'x'.
    if (release.length) void this.release(release)
  }

  /** How long a lease nobody asked for is kept now (`keepMs`, `unheardKeepMs`). */
  private keepFor(): number {
    return this.coord.hears() ? this.keepMs : this.unheardKeepMs
  }

  /**
   * Gives the leases of `ids` back, each with the stamp its last turn left (a call per stamp
   * and `CALL_CHUNK` ids, all sent at once: in order, and others' commands run between
   * them), and raises the shared clock past every row written here so far (a failed turn's
   * rows too, though they leave no stamp).
   */
  private async release(ids: number[]): Promise<void> {
    const raise = this.clock.version()
    const byStamp = new Map<string | null, { ids: number[]; notes: (string | null)[] }>()
    for (const id of ids) {
      const h = this.held.get(id)
      const stamp = h?.stamp ?? null
      this.held.delete(id)
      const note = noteOf(h, stamp)
      const same = byStamp.get(stamp)
      if (same) {
        same.ids.push(id)
        same.notes.push(note)
      } else byStamp.set(stamp, { ids: [id], notes: [note] })
    }
    const calls: Promise<void>[] = []
    for (const [stamp, same] of byStamp)
      for (let i = 0; i < same.ids.length; i += CALL_CHUNK)
        calls.push(
          this.coord
            .releaseMany(
              METERS,
              same.ids.slice(i, i + CALL_CHUNK),
              stamp,
              this.owner,
              raise,
              same.notes.slice(i, i + CALL_CHUNK),
            )
            // Redis unreachable: the lease lapses with its TTL and the stamp is not written,
            // so no actor anywhere trusts what it holds of the meter (it reloads).
            .catch(() => {}),
        )
    await Promise.all(calls)
  }

  /** No turn runs on `h` from `now`: it is kept for the meter's next turn here, for a while. */
  private idleFrom(h: Hold, now: number): void {
    h.idle = true
    h.idleSince = now
    if (h.wanted) this.lingerThenRelease()
    else this.keepThenRelease()
    if (this.held.size > this.maxHeld) this.trim()
  }

  /**
   * Past `maxHeld`: idle leases go back until a tenth under it, in the order they were taken
   * (a Map keeps it), once the turns ending now have all become idle.
   */
  private trim(): void {
    if (this.trimming) return
    this.trimming = true
    setImmediate(() => {
      this.trimming = false
      const over = this.held.size - Math.floor(this.maxHeld * 0.9)
      if (over > 0) void this.release(this.idleIds(undefined, over))
    })
  }

  /** The idle leases others asked for go back together once no turn here took them over. */
  private lingerThenRelease(): void {
    if (this.lingerTimer) return
    this.lingerTimer = setTimeout(() => {
      this.lingerTimer = null
      void this.release(this.idleIds((h) => h.wanted))
    }, this.lingerMs)
    this.lingerTimer.unref()
  }

  /**
   * The idle leases nobody else asked for go back once idle for `keepFor()`, a sweep at a
   * time: as often as `unheardKeepMs` needs, since the channel may go unheard any time.
   */
  private keepThenRelease(): void {
    if (this.keepTimer) return
    this.keepTimer = setTimeout(
      () => {
        this.keepTimer = null
        const now = Date.now()
        // A sweep reads every hold (hundreds of thousands in a large fleet): while heard, a
        // twentieth of the long keep apart; while not, at every tick, for the short one.
        if (!this.coord.hears() || now - this.sweptAt >= this.keepMs / 20) {
          this.sweptAt = now
          const before = now - this.keepFor()
          void this.release(this.idleIds((h) => h.idleSince <= before))
        }
        for (const h of this.held.values()) if (h.idle) return this.keepThenRelease()
      },
      Math.max(10, this.unheardKeepMs / 4),
    )
    this.keepTimer.unref()
  }

  /** The idle leases `which` picks, in the order they were taken; at most `max` of them. */
  private idleIds(which: (h: Hold) => boolean = () => true, max = Infinity): number[] {
    const ids: number[] = []
    for (const [id, h] of this.held) {
      if (ids.length >= max) break
      if (h.idle && which(h)) ids.push(id)
    }
    return ids
  }

  /** Gives back every idle lease now, each with its stamp and note (tests of hand-overs). */
  giveBackIdle(): Promise<void> {
    return this.release(this.idleIds())
  }

  /** Gives back every idle lease at once; leases of turns still running go when they end. */
  async close(): Promise<void> {
    this.closed = true
    if (this.lingerTimer) clearTimeout(this.lingerTimer)
    if (this.keepTimer) clearTimeout(this.keepTimer)
    this.lingerTimer = null
    this.keepTimer = null
    await this.giveBackIdle()
  }

  private renewWhileHeld(): void {
    if (this.renewTimer) return
    this.renewTimer = setInterval(() => this.renew(), Math.max(10, Math.floor(this.ttlMs / 3)))
    this.renewTimer.unref()
  }

  /**
   * Sets the heartbeat the leases held here live by, and renews the keys of those held for
   * half their key ttl; stops the timer once none is held.
   */
  private renew(): void {
    if (this.held.size === 0) {
      clearInterval(this.renewTimer!)
      this.renewTimer = null
      return
    }
    if (this.renewing) return
    this.renewing = true
    void this.beat().finally(() => {
      this.renewing = false
    })
  }

  private async beat(): Promise<void> {
    const asked = Date.now()
    let alive: boolean
    try {
      alive = await this.coord.heartbeat(METERS, this.owner, this.ttlMs)
    } catch {
      // Redis unreachable: the turns' own writes fail or succeed on their own; keep trying.
      return
    }
    if (!alive) this.lapsed()
    this.setAlive(asked)
    const now = Date.now()
    // Reading every hold each beat cost as much as the keep sweep; a tenth of the renewal
    // age apart is soon enough (a key lives twice that age, and is trusted 90 % of it).
    if (now - this.renewScanAt < this.keyRenewMs / 10) return
    this.renewScanAt = now
    const old: number[] = []
    for (const [id, h] of this.held) {
      if (h.broken || now - h.renewed < this.keyRenewMs) continue
      // Renewals failed for most of the key's life: it may lapse before the next one lands.
      if (now - h.renewed >= KEY_TRUSTED_MS) this.breakHold(h)
      else old.push(id)
    }
    await this.renewHeld(old)
  }

  /**
   * A call that set the heartbeat, started at `asked`, answered: the heartbeat lives until at
   * least the ttl from `asked`. Where it may have lapsed since the call before (this one came
   * more than a ttl after it), the kept leases may be others' (`lapsed`).
   */
  private setAlive(asked: number): void {
    if (Date.now() - this.aliveAt >= this.ttlMs) this.lapsed()
    this.aliveAt = asked
  }

  /** The heartbeat may have lapsed: any lease held here may be another's now. All go back soon. */
  private lapsed(): void {
    for (const h of this.held.values()) this.breakHold(h)
  }

  /** `h` may have been another instance's meanwhile (`Hold.broken`). */
  private breakHold(h: Hold): void {
    if (h.broken) return
    h.broken = h.wanted = true
    if (h.idle) this.lingerThenRelease()
  }

  /**
   * A call per `CALL_CHUNK` ids, one after another. A lease renewed is trusted again from the
   * call's start; one refused (another instance holds it now) is broken. The leases of a
   * call that failed are tried again at the next scan (`beat`).
   */
  private async renewHeld(ids: number[]): Promise<void> {
    for (let i = 0; i < ids.length; i += CALL_CHUNK) {
      const chunk = ids.slice(i, i + CALL_CHUNK)
      const asked = Date.now()
      let batch: LeaseBatch
      try {
        batch = await this.coord.leaseMany(METERS, chunk, this.owner, this.ttlMs)
      } catch {
        continue
      }
      chunk.forEach((id, k) => {
        const h = this.held.get(id)
        if (!h || h.broken) return
        if (batch.values[k] === null) this.breakHold(h)
        else h.renewed = asked
      })
    }
  }
}

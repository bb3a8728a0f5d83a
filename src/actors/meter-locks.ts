// Per-meter ordering across instances sharing Redis: a meter's turn runs under a lease, and
// every turn leaves a fresh stamp for the next holder (lease-stamps.ts), with a hand-over
// note of what it wrote where the meter is likely to change hands (handover-note.ts). The
// meters of a batch of turns take and give back their leases together, one script call each
// way, and the turns whose leases came back run as one batch (a turn per meter, with its own
// promises, body and INSERT piece, ran the Redis gateway bench at 8,200 readings/s against
// 190,000 in-process). A lease outlives its turn, kept for the meter's next turn here until
// another instance asks for it or the meter has been idle for long (lease-holds.ts); the
// leases live by this instance's heartbeat (lease-heartbeat.ts).
import crypto from 'node:crypto'
import type { LockedMeter, LockEntry, LockOutcome, MeterLocks } from './meter-lock-contract.js'
import { apiError } from '../errors.js'
import {
  HEARTBEAT_LEASE_TTL_MS,
  HEARTBEAT_MARK,
  type Coord,
  type LeaseBatch,
  type LeaseSpace,
} from '../coord/coord.js'
import { NOTE_MAX_CHARS, noteBetween, noteText } from './handover-note.js'
import { catchUpFrom, localClock, stampOf, type StampClock } from './lease-stamps.js'
import { LeaseHolds, type Hold } from './lease-holds.js'
import { CALL_CHUNK, LeaseHeartbeat } from './lease-heartbeat.js'

/** Lease `lease:meter:<id>`, stamp `mstamp:<id>` (the key names every instance agrees on). */
const METERS: LeaseSpace = {
  lease: 'meter:',
  value: 'mstamp:',
  clock: 'meter-clock',
  note: 'mnote:',
  want: 'mwant:',
  alive: 'malive:',
}

/** The hand-over note a hold leaves with `stamp` (read by `noteBetween`); null where it has none. */
const noteOf = (h: Hold | undefined, stamp: string | null): string | null =>
  stamp !== null && h?.lines ? noteText(h.found, stamp, h.lines) : null

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
   * How long after its last renewal a held lease's key is still trusted to be this
   * instance's: it lives `HEARTBEAT_LEASE_TTL_MS` from then (90 % of that by default).
   */
  keyTrustedMs?: number
  /** Most leases held here at once; past it, idle ones go back, the longest held first. */
  maxHeld?: number
  /** Must be the store's version clock wherever actors catch up on stamps (build.ts). */
  clock?: StampClock
}

export class CoordMeterLocks implements MeterLocks {
  private readonly owner = HEARTBEAT_MARK + crypto.randomUUID()
  /** Leases held here (in a turn or kept for the next). */
  private readonly holds: LeaseHolds
  private readonly heartbeat: LeaseHeartbeat
  private closed = false
  private readonly ttlMs: number
  private readonly waitMs: number
  private readonly clock: StampClock

  constructor(
    private readonly coord: Coord,
    o: MeterLockOptions = {},
  ) {
    this.ttlMs = o.ttlMs ?? 10_000
    this.waitMs = o.waitMs ?? 30_000
    this.clock = o.clock ?? localClock()
    const keepMs = o.keepMs ?? 1_200_000
    this.holds = new LeaseHolds({
      lingerMs: o.lingerMs ?? 10,
      maxHoldMs: o.maxHoldMs ?? 100,
      keepMs,
      unheardKeepMs: Math.min(keepMs, o.unheardKeepMs ?? 5_000),
      maxHeld: o.maxHeld ?? 400_000,
      hears: () => coord.hears(),
      giveBack: (ids) => void this.release(ids),
    })
    const keyTrustedMs = o.keyTrustedMs ?? HEARTBEAT_LEASE_TTL_MS * 0.9
    this.heartbeat = new LeaseHeartbeat(coord, this.holds, {
      space: METERS,
      owner: this.owner,
      ttlMs: this.ttlMs,
      keyRenewMs: Math.min(o.keyRenewMs ?? HEARTBEAT_LEASE_TTL_MS / 2, keyTrustedMs),
      keyTrustedMs,
    })
    // Until subscribed (or with Redis's subscriber down) a refusal goes unheard here: the
    // meter then goes back after `unheardKeepMs`.
    coord
      .subscribe(METERS.want + this.owner, (ids) => this.holds.wantedElsewhere(ids))
      .catch(() => {})
  }

  async withLocks(
    entries: readonly LockEntry[],
    fn: (locked: LockedMeter[]) => Promise<void>,
  ): Promise<LockOutcome[]> {
    const out = new Array<LockOutcome>(entries.length)
    const started = Date.now()
    this.heartbeat.checkAt(started)
    // Leases lingering here after an earlier turn: taken over, nothing asked of Redis.
    let locked: LockedMeter[] = []
    let pending: number[] = []
    // Idle leases that may have been another's meanwhile: asked of Redis again, as if not
    // held (so no sweep gives them back meanwhile); given back if that fails.
    let broken: number[] | null = null
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!
      const h = this.holds.get(e.meterId)
      if (!h?.idle) {
        pending.push(i)
        continue
      }
      if (h.broken) {
        this.holds.delete(e.meterId)
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
          this.heartbeat.setAlive(asked)
          // Each is held anew now, or another's.
          broken = null
        } catch (error) {
          if (broken) void this.release(broken)
          for (const i of pending) out[i] = { error }
          // The leases taken over stay held; their stamps are written when they go.
          const now = Date.now()
          for (const l of locked) {
            out[l.index] = { error }
            this.holds.idleFrom(this.holds.get(entries[l.index]!.meterId)!, now)
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
          const note = since !== null ? noteBetween(seen, stamp, batch.notes?.[k]) : null
          // A meter that came from another instance (or is new to its actor after a
          // restart) is likely to be asked back: it goes back as it did before leases were
          // kept (two instances taking turns on the same meters lost ~8 % to the refusal
          // each hold waited for). A meter no instance ever held (no stamp) is kept like
          // one that stays: a fleet's first contact took every lease twice.
          const wanted = changed && stamp !== ''
          this.holds.add(entries[i]!.meterId, {
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
        this.heartbeat.start()
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
    const keep = this.holds.keepFor()
    const release: number[] = []
    // One stamp string per epoch (nearly always one per batch), not one per meter: the
    // release groups meters by it.
    let stamp = null as { epoch: string; text: string } | null
    for (const l of locked) {
      const e = entries[l.index]!
      const id = e.meterId
      const h = this.holds.get(id)!
      if (h.lines !== null) {
        const line = failed ? null : (e.note?.() ?? null)
        if (line === null || (h.chars += line.length + 1) > NOTE_MAX_CHARS) h.lines = null
        else h.lines.push(line)
      }
      if (version !== null && stamp?.epoch !== h.epoch)
        stamp = { epoch: h.epoch, text: stampOf(version, h.epoch) }
      h.stamp = version === null ? null : stamp!.text
      if (h.stamp !== null) out[l.index] = { seen: h.stamp }
      if (failed || this.closed || this.holds.heldEnough(h, now, keep)) release.push(id)
      else this.holds.idleFrom(h, now)
    }
    // Sent now, so it reaches Redis before any next turn here asks for the same meters (one
    // connection, in order); not awaited: a holder that dies before it lands leaves 'x'.
    if (release.length) void this.release(release)
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
      const h = this.holds.get(id)
      const stamp = h?.stamp ?? null
      this.holds.delete(id)
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

  /** Gives back every idle lease now, each with its stamp and note (tests of hand-overs). */
  giveBackIdle(): Promise<void> {
    return this.release(this.holds.idleIds())
  }

  /** Gives back every idle lease at once; leases of turns still running go when they end. */
  async close(): Promise<void> {
    this.closed = true
    this.holds.stop()
    await this.giveBackIdle()
  }
}

// A meter's stamp: what its last turn under a lease left in Redis for the next holder, so
// that holder's actor knows whether what it holds of the meter is still all there is.
// Every turn leaves a fresh stamp: a row version above every row it wrote (the store's
// version clock, `StampClock`) and the epoch of the shared clock below. The releases raise
// a clock all instances share (`meter-clock` in Redis) to their stamps, and every instance
// that takes leases moves its version clock past that clock: so every row written after a
// stamp, by any instance, has a higher version than the stamp. An actor whose last stamp is
// not the current one therefore catches up on the rows versioned after its own
// (`LockedMeter.since`, MeterActor.catchUp): a meter changing instances costs what the other
// one wrote, not a reload of its window (which, with two instances taking turns on the same
// meters, was all their ingest did). Where the stamp says less (a holder died or failed
// mid-turn and left 'x', Redis lost its keys and the clock started a new epoch, a stamp of
// an older release) the actor reloads from ClickHouse.

/**
 * Where stamps come from: the store's row versions (Store: µs since the epoch, monotonic
 * here, moved past versions seen elsewhere by `observeVersion`).
 */
export interface StampClock {
  version(): number
  observeVersion(v: number): void
}

/** A monotonic µs clock of this process: stamps without a store (the lease tests). */
export function localClock(): StampClock {
  let last = 0
  return {
    version: () => (last = Math.max(Date.now() * 1000, last + 1)),
    observeVersion: (v) => void (last = Math.max(last, v)),
  }
}

/** A stamp as written: `<version>@<epoch of the shared clock>`. */
export const stampOf = (version: number, epoch: string) => `${version}@${epoch}`

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
export function catchUpFrom(seen: string | null, stamp: string): number | null {
  if (seen === null) return null
  const a = parseStamp(seen)
  const b = parseStamp(stamp)
  return a && b && a.epoch === b.epoch && b.version > a.version ? a.version : null
}

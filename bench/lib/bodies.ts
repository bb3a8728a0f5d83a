// Request bodies for the load generator, built on the fly so every reading is new.
// Readings are split into lanes: a lane owns its own meters and its requests carry strictly
// increasing recorded_at per meter, so a meter never sees a "late" reading merely because two
// requests overtook each other (a late reading makes the meter actor look up its stored
// neighbours, which is a different workload and would be measured by accident).

import { FleetFrames, type FrameShape } from './telegram-frames.js'

export type BodySpec =
  | {
      kind: 'generic'
      /** readings per request */
      batch: number
      /** meters per lane; batch / meters readings per meter per request */
      meters: number
      startMs: number
      stepMs: number
    }
  | {
      kind: 'telegram'
      batch: number
      /** wM-Bus frames (hex); one meter per (lane, frame) */
      telegrams: string[]
      /** appended to the meter names (keeps runs of different frame kinds apart) */
      suffix?: string
      startMs: number
      stepMs: number
    }
  | {
      /**
       * Telegram gateway: every request of a lane names its `batch` meters once each
       * (1 telegram per meter per request); meter i of a lane is fixture i mod n with a
       * wM-Bus identity of its own (`telegramGatewayId`), and recorded_at moves one step per
       * request. Its telegram at time t is its `telegramIndex(t)`-th (telegram-frames.ts):
       * access number and main register move with it, so none repeats another.
       */
      kind: 'telegramGateway'
      batch: number
      shapes: FrameShape[]
      /** appended to the meter names (keeps runs of different frame kinds apart) */
      suffix: string
      /** keeps the identities of different frame kinds apart (0–9) */
      idDigit: number
      /**
       * Gateways that hear each telegram (default 1): lanes h·g … h·g + h − 1 send the meters
       * and telegrams of group g, each stamped with its own receive time (1 ms apart), so all
       * but the first to arrive are repeats (answered `duplicate`).
       */
      hearers?: number
      startMs: number
      stepMs: number
    }
  | {
      /**
       * A fleet larger than one request: a lane owns `meters` meters and each request names
       * the next `batch` of them in rotation, one reading each; a meter's k-th reading is
       * `stepMs` after its (k-1)-th. So each meter reports once every meters / batch requests
       * of its lane, as a large deployment's meters do (every 15 minutes, say).
       */
      kind: 'fleet'
      batch: number
      meters: number
      startMs: number
      stepMs: number
    }
  | {
      kind: 'webhook'
      batch: number
      meters: number
      startMs: number
      stepMs: number
    }
  | {
      /**
       * Shared meters: every request names the same `batch` meters, one reading each; the
       * time moves forward across all lanes (step = seq × lanes + lane), so concurrent
       * requests overlap and arrive out of order per meter. Every `lateEvery`-th reading
       * (by a hash of step and meter) is instead `lateMs` in the past (half a step off the
       * grid, so it never collides). Values rise linearly with time: no flag fires.
       */
      kind: 'shared'
      batch: number
      lanes: number
      startMs: number
      stepMs: number
      lateEvery?: number
      lateMs?: number
    }
  | {
      /** First contact: `batch` meters never seen before per request, one reading each; with
       *  `shared`, the seq-th request of every lane names the same meters (same reading). */
      kind: 'newMeters'
      batch: number
      prefix: string
      shared: boolean
      atMs: number
    }
  | {
      /**
       * First contact over wM-Bus: every request carries one telegram each of `batch` meters
       * never heard before, named by their link layer alone (no `meter` field: the service
       * derives the identifier, as from a gateway). Request r of a run (r = seq × lanes + lane,
       * or seq with `shared`) holds identities idBase + r·batch … + batch − 1, meter i in it
       * fixture shape i mod n. With `shared`, the seq-th request of every lane carries the same
       * telegrams, each lane stamping its own receive time (lane ms after atMs): several
       * gateways hearing one new meter, whose first report creates it and the others repeat it.
       */
      kind: 'telegramNew'
      batch: number
      shapes: FrameShape[]
      shared: boolean
      lanes: number
      /** 8 decimal digits with every identity of the run: idBase + requests · batch < 10^8 */
      idBase: number
      atMs: number
    }
  | { kind: 'fixed'; body: string; readings: number }
  /** a prebuilt pool of bodies of another spec, cycled (no per-request build cost) */
  | { kind: 'pool'; of: BodySpec; size: number }

export const genericMeter = (lane: number, i: number) => `g${lane}-${i}`
export const fleetMeter = (lane: number, i: number) => `f${lane}-${i}`
export const webhookMeter = (lane: number, i: number) => `w${lane}-${i}`
export const sharedMeter = (i: number) => `s-${i}`
export const telegramMeter = (lane: number, j: number) => `t${lane}-${j}`
export const telegramGatewayMeter = (lane: number, i: number, suffix: string) =>
  `tg${lane}-${i}${suffix}`
/** The wM-Bus identity (8 digits) of a telegram gateway meter: 9, kind, lane, i. */
export const telegramGatewayId = (lane: number, i: number, idDigit: number) =>
  90_000_000 + idDigit * 1_000_000 + lane * 10_000 + i
/** Which telegram of its meter is sent at time t: minutes since 2020 (the bench's step). */
export const telegramIndex = (t: number) => Math.floor((t - Date.UTC(2020, 0, 1)) / 60_000)

/** The telegrams of a lane of the telegram gateway profile (`telegramGateway` bodies). */
export function telegramGatewayFrames(
  shapes: FrameShape[],
  lane: number,
  meters: number,
  idDigit: number,
): FleetFrames {
  const ids = Array.from({ length: meters }, (_, i) => telegramGatewayId(lane, i, idDigit))
  return new FleetFrames(shapes, ids)
}

/** The fixed start of each of a lane's `count` items, built on first use of the lane. */
function perLane(count: number, head: (lane: number, i: number) => string) {
  const heads = new Map<number, string[]>()
  return (lane: number): string[] => {
    let h = heads.get(lane)
    if (!h) heads.set(lane, (h = Array.from({ length: count }, (_, i) => head(lane, i))))
    return h
  }
}

/** Returns (lane, seq) => request body for the seq-th request of a lane, and readings per body. */
export function bodyFactory(spec: BodySpec): {
  readings: number
  make: (lane: number, seq: number) => string
} {
  switch (spec.kind) {
    case 'fixed':
      return { readings: spec.readings, make: () => spec.body }
    case 'pool': {
      const inner = bodyFactory(spec.of)
      const bodies = Array.from({ length: spec.size }, (_, i) =>
        inner.make(i % 16, Math.floor(i / 16)),
      )
      let n = 0
      return { readings: inner.readings, make: () => bodies[n++ % bodies.length]! }
    }
    case 'generic': {
      const perMeter = Math.max(1, Math.round(spec.batch / spec.meters))
      const laneHeads = perLane(
        spec.meters,
        (lane, i) => `{"meter":"${genericMeter(lane, i)}","kind":"saldo","value":`,
      )
      return {
        readings: perMeter * spec.meters,
        make(lane, seq) {
          const h = laneHeads(lane)
          const parts: string[] = []
          for (let r = 0; r < perMeter; r++) {
            const step = seq * perMeter + r
            const tail = `,"unit":"kwh","recorded_at":"${new Date(spec.startMs + step * spec.stepMs).toISOString()}"}`
            // A rising register: never a saldo_decrease, a plausible rate.
            const value = (step * 0.25).toFixed(2)
            for (let i = 0; i < h.length; i++) parts.push(h[i] + value + tail)
          }
          return `{"readings":[${parts.join(',')}]}`
        },
      }
    }
    case 'fleet': {
      const laneHeads = perLane(
        spec.meters,
        (lane, i) => `{"meter":"${fleetMeter(lane, i)}","kind":"saldo","value":`,
      )
      return {
        readings: spec.batch,
        make(lane, seq) {
          const h = laneHeads(lane)
          const parts: string[] = []
          for (let j = 0; j < spec.batch; j++) {
            const n = seq * spec.batch + j
            const k = Math.floor(n / spec.meters)
            // A rising register: never a saldo_decrease, a plausible rate.
            parts.push(
              `${h[n % spec.meters]}${(k * 0.25).toFixed(2)},"unit":"kwh","recorded_at":"${new Date(spec.startMs + k * spec.stepMs).toISOString()}"}`,
            )
          }
          return `{"readings":[${parts.join(',')}]}`
        },
      }
    }
    case 'shared': {
      const heads = Array.from(
        { length: spec.batch },
        (_, i) => `{"meter":"${sharedMeter(i)}","kind":"saldo","value":`,
      )
      return {
        readings: spec.batch,
        make(lane, seq) {
          const step = seq * spec.lanes + lane
          const parts: string[] = []
          for (let i = 0; i < heads.length; i++) {
            const late = spec.lateEvery && ((step * 7919 + i * 104729) >>> 0) % spec.lateEvery === 0
            const t = late
              ? spec.startMs + step * spec.stepMs - spec.lateMs! + spec.stepMs / 2
              : spec.startMs + step * spec.stepMs
            // Linear in time (multiples of 1/8 kWh): a late reading fits between its neighbours.
            const value = ((t - spec.startMs) / spec.stepMs) * 0.25
            parts.push(
              `${heads[i]}${value},"unit":"kwh","recorded_at":"${new Date(t).toISOString()}"}`,
            )
          }
          return `{"readings":[${parts.join(',')}]}`
        },
      }
    }
    case 'newMeters': {
      const at = new Date(spec.atMs).toISOString()
      return {
        readings: spec.batch,
        make(lane, seq) {
          const base = `${spec.prefix}${spec.shared ? '' : `${lane}-`}${seq}-`
          const parts: string[] = []
          for (let i = 0; i < spec.batch; i++)
            parts.push(
              `{"meter":"${base}${i}","kind":"saldo","value":1,"unit":"kwh","recorded_at":"${at}"}`,
            )
          return `{"readings":[${parts.join(',')}]}`
        },
      }
    }
    case 'webhook': {
      const perMeter = Math.max(1, Math.round(spec.batch / spec.meters))
      return {
        readings: perMeter * spec.meters,
        make(lane, seq) {
          const parts: string[] = []
          for (let r = 0; r < perMeter; r++) {
            const step = seq * perMeter + r
            const at = new Date(spec.startMs + step * spec.stepMs).toISOString()
            for (let i = 0; i < spec.meters; i++)
              parts.push(
                `{"dev_eui":"${webhookMeter(lane, i)}","decoded":{"volume_l":${step * 10}},"received_at":"${at}"}`,
              )
          }
          return `{"uplinks":[${parts.join(',')}]}`
        },
      }
    }
    case 'telegramGateway': {
      const laneHeads = perLane(
        spec.batch,
        (lane, i) =>
          `{"meter":"${telegramGatewayMeter(lane, i, spec.suffix)}","profile":"wmbus_oms","payload":{"telegram":"`,
      )
      const frames = new Map<number, FleetFrames>()
      const all = Array.from({ length: spec.batch }, (_, i) => i)
      return {
        readings: spec.batch,
        make(lane, seq) {
          const hearers = spec.hearers ?? 1
          const group = Math.floor(lane / hearers)
          const h = laneHeads(group)
          let f = frames.get(group)
          if (!f)
            frames.set(
              group,
              (f = telegramGatewayFrames(spec.shapes, group, spec.batch, spec.idDigit)),
            )
          const t = spec.startMs + seq * spec.stepMs
          const hex = f.request(all, telegramIndex(t))
          const heardAt = new Date(t + (lane % hearers)).toISOString()
          const tail = `"},"recorded_at":"${heardAt}"}`
          const parts = new Array<string>(h.length)
          for (let i = 0; i < h.length; i++) parts[i] = h[i] + hex[i] + tail
          return `{"readings":[${parts.join(',')}]}`
        },
      }
    }
    case 'telegramNew': {
      const head = `{"profile":"wmbus_oms","payload":{"telegram":"`
      const all = Array.from({ length: spec.batch }, (_, i) => i)
      const k = telegramIndex(spec.atMs)
      return {
        readings: spec.batch,
        make(lane, seq) {
          const r = spec.shared ? seq : seq * spec.lanes + lane
          const first = spec.idBase + r * spec.batch
          const ids = all.map((i) => first + i)
          const hex = new FleetFrames(spec.shapes, ids).request(all, k)
          const heardAt = new Date(spec.atMs + (spec.shared ? lane : 0)).toISOString()
          const tail = `"},"recorded_at":"${heardAt}"}`
          return `{"readings":[${hex.map((h) => head + h + tail).join(',')}]}`
        },
      }
    }
    case 'telegram': {
      const n = spec.telegrams.length
      return {
        readings: spec.batch,
        make(lane, seq) {
          const parts: string[] = []
          for (let k = 0; k < spec.batch; k++) {
            const j = k % n
            // Each (lane, frame) meter gets batch/n readings per request, all newer than the last.
            const step = seq * Math.ceil(spec.batch / n) + Math.floor(k / n)
            const at = new Date(spec.startMs + step * spec.stepMs).toISOString()
            parts.push(
              `{"meter":"${telegramMeter(lane, j)}${spec.suffix ?? ''}","profile":"wmbus_oms","payload":{"telegram":"${spec.telegrams[j]}"},"recorded_at":"${at}"}`,
            )
          }
          return `{"readings":[${parts.join(',')}]}`
        },
      }
    }
  }
}

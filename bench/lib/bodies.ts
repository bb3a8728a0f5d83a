// Request bodies for the load generator, built on the fly so every reading is new.
// Readings are split into lanes: a lane owns its own meters and its requests carry strictly
// increasing recorded_at per meter, so a meter never sees a "late" reading merely because two
// requests overtook each other (a late reading makes the meter actor look up its stored
// neighbours, which is a different workload and would be measured by accident).

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
      kind: 'webhook'
      batch: number
      meters: number
      startMs: number
      stepMs: number
    }
  | { kind: 'fixed'; body: string; readings: number }
  /** a prebuilt pool of bodies of another spec, cycled (no per-request build cost) */
  | { kind: 'pool'; of: BodySpec; size: number }

export const genericMeter = (lane: number, i: number) => `g${lane}-${i}`
export const webhookMeter = (lane: number, i: number) => `w${lane}-${i}`
export const telegramMeter = (lane: number, j: number) => `t${lane}-${j}`

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
      const heads = new Map<number, string[]>()
      const laneHeads = (lane: number) => {
        let h = heads.get(lane)
        if (!h) {
          h = Array.from(
            { length: spec.meters },
            (_, i) => `{"meter":"${genericMeter(lane, i)}","kind":"saldo","value":`,
          )
          heads.set(lane, h)
        }
        return h
      }
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

// One delivery through its mapping, with bounds that keep one endpoint from stalling every
// tenant (the event loop is shared): the item cap is checked on the item list before any
// field is evaluated, the whole delivery's evaluation time is bounded, and the work yields
// to the event loop every few milliseconds so other requests are answered meanwhile.
import { validationError } from '../errors.js'
import { mapFields, mapItems, type CompiledMapping } from './mapping.js'

export interface DeliveryLimits {
  /** Most items one delivery may map to (MAX_BATCH_ITEMS). */
  maxItems: number
  /** Evaluation time the whole delivery may use, time spent yielding not counted. */
  budgetMs: number
}

/** Evaluation time between two yields to the event loop. */
const SLICE_MS = 10

const yieldToLoop = () => new Promise<void>((r) => setImmediate(r))

/** The mapped fields of every item of `body`, in delivery order; 422 over a limit. */
export async function mapDelivery(
  m: CompiledMapping,
  body: unknown,
  limits: DeliveryLimits,
): Promise<Record<string, unknown>[]> {
  let spent = 0
  let sliceStart = performance.now()
  const items = await mapItems(m, body)
  if (items.length > limits.maxItems)
    throw validationError({
      items: [
        `The delivery has ${items.length} items; at most ${limits.maxItems} are accepted per delivery. Nothing was stored.`,
      ],
    })
  const out: Record<string, unknown>[] = new Array(items.length)
  for (let i = 0; i < items.length; i++) {
    out[i] = await mapFields(m, items[i], body)
    const now = performance.now()
    if (now - sliceStart < SLICE_MS) continue
    spent += now - sliceStart
    if (spent > limits.budgetMs)
      throw validationError({
        mapping: [
          `Mapping the delivery took more than ${limits.budgetMs} ms (${i + 1} of ${items.length} items mapped); send fewer items per delivery or simplify the mapping. Nothing was stored.`,
        ],
      })
    await yieldToLoop()
    sliceStart = performance.now()
  }
  return out
}

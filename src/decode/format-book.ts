// Where compact-frame formats live beyond one decoder worker. A worker keeps the formats
// it learnt from full frames in a small table of its own (asm/compact.ts); the book keeps
// every one, shared by all workers and instances and kept over restarts, so a compact
// frame decodes wherever it lands once any of them has seen the meter's full frame.

/** A format's identity: the tenant (scope), the meter's link identity and the signature. */
export interface FormatKey {
  scope: number
  /** Meter id bytes as the decoder holds them (little-endian u32 bits). */
  id: number
  /** Manufacturer code. */
  m: number
  /** CRC-16 of the record headers (the compact frame's format signature). */
  sig: number
}

export interface KnownFormat extends FormatKey {
  /** The worker table entry as hex: per record, a length byte and the header bytes. */
  format: string
}

export interface FormatBook {
  /** Formats known for these keys, by `formatKey`. */
  find(keys: FormatKey[]): Promise<Map<string, string>>
  /** Keeps formats a worker learnt; done before the batch that taught them is answered. */
  keep(formats: KnownFormat[]): Promise<void>
}

export const formatKey = (k: FormatKey): string => `${k.scope}:${k.m}:${k.id >>> 0}:${k.sig}`

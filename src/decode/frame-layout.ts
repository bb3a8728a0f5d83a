// Binary frame layouts of workspace profiles (operator-api.md, Device
// profiles, `decoder`): validation for the admin API and compilation for the
// decoder core.
export type FrameLayout = {
  encoding: 'hex' | 'base64'
  fields: { name: string; type: string; endian?: 'le' | 'be'; scale?: number; flags?: string[] }[]
}
export type FrameOutcome =
  { ok: true; value: number; status: string[] } | { ok: false; error: string }

// type codes of asm/binframe.ts
const T_U = 1,
  T_I = 2,
  T_F = 3,
  T_BCD = 4,
  T_FLAGS = 5,
  T_SKIP = 6

export function typeInfo(type: string): { code: number; len: number } | null {
  switch (type) {
    case 'u8':
      return { code: T_U, len: 1 }
    case 'u16':
      return { code: T_U, len: 2 }
    case 'u32':
      return { code: T_U, len: 4 }
    case 'u64':
      return { code: T_U, len: 8 }
    case 'i8':
      return { code: T_I, len: 1 }
    case 'i16':
      return { code: T_I, len: 2 }
    case 'i32':
      return { code: T_I, len: 4 }
    case 'i64':
      return { code: T_I, len: 8 }
    case 'f32':
      return { code: T_F, len: 4 }
    case 'f64':
      return { code: T_F, len: 8 }
    case 'flags8':
      return { code: T_FLAGS, len: 1 }
    case 'flags16':
      return { code: T_FLAGS, len: 2 }
  }
  const m = /^(bcd|skip)([1-8])$/.exec(type)
  if (m) return { code: m[1] === 'bcd' ? T_BCD : T_SKIP, len: Number(m[2]) }
  return null
}

const MAX_BYTES = 4096

export function validateLayout(
  layout: unknown,
):
  | { ok: true; layout: FrameLayout; byteLength: number }
  | { ok: false; errors: Record<string, string> } {
  const errors: Record<string, string> = {}
  const P = 'decoder'
  if (typeof layout !== 'object' || layout === null || Array.isArray(layout)) {
    return { ok: false, errors: { [P]: 'must be an object with encoding and fields' } }
  }
  const l = layout as Record<string, unknown>
  for (const k of Object.keys(l))
    if (k !== 'encoding' && k !== 'fields') errors[`${P}.${k}`] = 'unknown property'
  if (l.encoding !== 'hex' && l.encoding !== 'base64')
    errors[`${P}.encoding`] = 'must be "hex" or "base64"'
  const out: FrameLayout['fields'] = []
  let byteLength = 0
  if (!Array.isArray(l.fields) || l.fields.length === 0) {
    errors[`${P}.fields`] = 'must be a non-empty array'
  } else if (l.fields.length > 256) {
    errors[`${P}.fields`] = 'at most 256 fields'
  } else {
    const names = new Set<string>()
    l.fields.forEach((f: unknown, i: number) => {
      const p = `${P}.fields.${i}`
      if (typeof f !== 'object' || f === null || Array.isArray(f)) {
        errors[p] = 'must be an object'
        return
      }
      const x = f as Record<string, unknown>
      for (const k of Object.keys(x)) {
        if (!['name', 'type', 'endian', 'scale', 'flags'].includes(k))
          errors[`${p}.${k}`] = 'unknown property'
      }
      if (typeof x.name !== 'string' || x.name.length === 0)
        errors[`${p}.name`] = 'must be a non-empty string'
      else if (names.has(x.name)) errors[`${p}.name`] = `duplicate field name "${x.name}"`
      else names.add(x.name)
      const ti = typeof x.type === 'string' ? typeInfo(x.type) : null
      if (!ti) {
        errors[`${p}.type`] =
          'unknown type; expected u8 u16 u32 u64 i8 i16 i32 i64 f32 f64 bcd1..bcd8 flags8 flags16 skip1..skip8'
      } else byteLength += ti.len
      if (x.endian !== undefined && x.endian !== 'le' && x.endian !== 'be')
        errors[`${p}.endian`] = 'must be "le" or "be"'
      if (x.scale !== undefined && (typeof x.scale !== 'number' || !Number.isFinite(x.scale))) {
        errors[`${p}.scale`] = 'must be a finite number'
      }
      if (x.flags !== undefined) {
        if (!Array.isArray(x.flags) || !x.flags.every((s) => typeof s === 'string'))
          errors[`${p}.flags`] = 'must be an array of strings'
        else if (ti && ti.code !== T_FLAGS)
          errors[`${p}.flags`] = 'only allowed on flags8 and flags16'
        else if (ti && x.flags.length > ti.len * 8)
          errors[`${p}.flags`] = `at most ${ti.len * 8} names`
      }
      if (x.name === 'value' && ti && (ti.code === T_SKIP || ti.code === T_FLAGS))
        errors[`${p}.type`] = 'the value field must be numeric'
      if (x.name === 'status' && ti && ti.code !== T_FLAGS)
        errors[`${p}.type`] = 'the status field must be flags8 or flags16'
      const field: FrameLayout['fields'][number] = {
        name: x.name as string,
        type: x.type as string,
      }
      if (x.endian !== undefined) field.endian = x.endian as 'le' | 'be'
      if (x.scale !== undefined) field.scale = x.scale as number
      if (x.flags !== undefined) field.flags = x.flags as string[]
      out.push(field)
    })
    if (!names.has('value') && !errors[`${P}.fields`])
      errors[`${P}.fields`] = 'a field named "value" is required'
    if (byteLength > MAX_BYTES) errors[`${P}.fields`] = `layout longer than ${MAX_BYTES} bytes`
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors }
  return { ok: true, layout: { encoding: l.encoding as 'hex' | 'base64', fields: out }, byteLength }
}

/** Compact form sent to the workers. */
export interface CompiledLayout {
  encoding: 'hex' | 'base64'
  codes: number[] // [count, type, len, be, ...]
  byteLength: number
  valueIndex: number
  scale: number
  statusIndex: number
  statusNames: string[]
}

export function compileLayout(layout: FrameLayout): CompiledLayout {
  const v = validateLayout(layout)
  if (!v.ok) throw new Error('invalid layout: ' + JSON.stringify(v.errors))
  const codes = [layout.fields.length]
  let valueIndex = -1,
    statusIndex = -1,
    scale = 1
  let statusNames: string[] = []
  layout.fields.forEach((f, i) => {
    const ti = typeInfo(f.type)!
    codes.push(ti.code, ti.len, f.endian === 'be' ? 1 : 0)
    if (f.name === 'value') {
      valueIndex = i
      scale = f.scale ?? 1
    }
    if (f.name === 'status') {
      statusIndex = i
      statusNames = f.flags ?? []
    }
  })
  return {
    encoding: layout.encoding,
    codes,
    byteLength: v.byteLength,
    valueIndex,
    scale,
    statusIndex,
    statusNames,
  }
}

// Binary frame layouts: validation and decoding of every type.
import t from 'tap'
import { validateLayout, compileLayout, type FrameLayout } from '../../src/decode/frame-layout.js'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeFrameSync } from '../../src/decode/frames.js'

const core = loadWasmCore()
const dec = (l: FrameLayout, f: string) => decodeFrameSync(core, compileLayout(l), f)
const one = (type: string, hex: string, endian?: 'le' | 'be', scale?: number) =>
  dec(
    {
      encoding: 'hex',
      fields: [
        {
          name: 'value',
          type,
          ...(endian ? { endian } : {}),
          ...(scale !== undefined ? { scale } : {}),
        },
      ],
    },
    hex,
  )

t.test('integer types, both endiannesses', async (t) => {
  t.same(one('u8', 'FF'), { ok: true, value: 255, status: [] })
  t.same(one('i8', 'FF'), { ok: true, value: -1, status: [] })
  t.same(one('u16', '3412'), { ok: true, value: 0x1234, status: [] })
  t.same(one('u16', '1234', 'be'), { ok: true, value: 0x1234, status: [] })
  t.same(one('i16', 'FEFF'), { ok: true, value: -2, status: [] })
  t.same(one('i16', 'FFFE', 'be'), { ok: true, value: -2, status: [] })
  t.same(one('u32', '78563412'), { ok: true, value: 0x12345678, status: [] })
  t.same(one('u32', '12345678', 'be'), { ok: true, value: 0x12345678, status: [] })
  t.same(one('i32', 'FFFFFFFF'), { ok: true, value: -1, status: [] })
  t.same(one('i32', '80000000', 'be'), { ok: true, value: -2147483648, status: [] })
  t.same(one('u64', '0100000000000000'), { ok: true, value: 1, status: [] })
  t.same(one('u64', '0000000100000000', 'be'), { ok: true, value: 2 ** 32, status: [] })
  t.same(one('i64', 'FEFFFFFFFFFFFFFF'), { ok: true, value: -2, status: [] })
  t.same(one('i64', 'FFFFFFFFFFFFFFFD', 'be'), { ok: true, value: -3, status: [] })
})

t.test('floats', async (t) => {
  const f32 = Buffer.alloc(4)
  f32.writeFloatLE(12.5)
  t.same(one('f32', f32.toString('hex')), { ok: true, value: 12.5, status: [] })
  f32.writeFloatBE(-0.15625)
  t.same(one('f32', f32.toString('hex'), 'be'), { ok: true, value: -0.15625, status: [] })
  const f64 = Buffer.alloc(8)
  f64.writeDoubleLE(123456.789)
  t.same(one('f64', f64.toString('hex')), { ok: true, value: 123456.789, status: [] })
  f64.writeDoubleBE(-1e-300)
  t.same(one('f64', f64.toString('hex'), 'be'), { ok: true, value: -1e-300, status: [] })
  f64.writeDoubleLE(5e-324)
  t.same(one('f64', f64.toString('hex')), { ok: true, value: 5e-324, status: [] })
})

t.test('bcd, scale, skip, flags, base64', async (t) => {
  t.same(one('bcd4', '78563412'), { ok: true, value: 12345678, status: [] })
  t.same(one('bcd4', '12345678', 'be'), { ok: true, value: 12345678, status: [] })
  t.same(one('bcd1', '99'), { ok: true, value: 99, status: [] })
  t.same(one('bcd8', '0100000000000000'), { ok: true, value: 1, status: [] })
  t.match(one('bcd2', '1A00'), { ok: false, error: /BCD/ })
  t.same(one('u16', 'E803', undefined, 0.001), { ok: true, value: 1, status: [] })
  const layout: FrameLayout = {
    encoding: 'hex',
    fields: [
      { name: 'hdr', type: 'skip2' },
      { name: 'value', type: 'u32', endian: 'be', scale: 0.01 },
      { name: 'status', type: 'flags8', flags: ['leak', 'burst', 'low_battery'] },
      { name: 'pad', type: 'skip1' },
    ],
  }
  t.same(dec(layout, 'AABB0000303905FF'), {
    ok: true,
    value: 123.45,
    status: ['leak', 'low_battery'],
  })
  t.same(dec(layout, 'AABB0000303980FF'), { ok: true, value: 123.45, status: ['bit7'] })
  const l16: FrameLayout = {
    encoding: 'base64',
    fields: [
      { name: 'status', type: 'flags16', endian: 'be', flags: ['a'] },
      { name: 'value', type: 'i16' },
    ],
  }
  t.same(dec(l16, Buffer.from([0x01, 0x01, 0x9c, 0xff]).toString('base64')), {
    ok: true,
    value: -100,
    status: ['a', 'bit8'],
  })
  t.match(dec(l16, '!!!'), { ok: false, error: 'must be base64' })
  t.match(dec(l16, Buffer.from([1, 2, 3]).toString('base64')), {
    ok: false,
    error: /does not match layout length 4/,
  })
})

t.test('length mismatch and bad hex', async (t) => {
  t.match(one('u16', 'FF'), { ok: false, error: /does not match layout length 2/ })
  t.match(one('u16', 'FFFFFF'), { ok: false, error: /does not match/ })
  t.match(one('u16', 'GGGG'), { ok: false, error: 'must be hexadecimal' })
})

t.test('validateLayout', async (t) => {
  const ok = validateLayout({
    encoding: 'hex',
    fields: [
      { name: 'value', type: 'bcd4' },
      { name: 'x', type: 'skip3' },
    ],
  })
  t.same(ok, {
    ok: true,
    layout: {
      encoding: 'hex',
      fields: [
        { name: 'value', type: 'bcd4' },
        { name: 'x', type: 'skip3' },
      ],
    },
    byteLength: 7,
  })
  const bad = validateLayout({
    encoding: 'bin',
    fields: [
      { name: 'value', type: 'u8' },
      { name: 'x', type: 'u12' },
      { name: 'y', type: 'u8', endian: 'mid', scale: 'x' },
      { name: 'status', type: 'u8' },
      { name: 'f', type: 'flags8', flags: Array(9).fill('a') },
    ],
  })
  t.equal(bad.ok, false)
  if (!bad.ok) {
    t.ok(bad.errors['decoder.encoding'])
    t.ok(bad.errors['decoder.fields.1.type'])
    t.ok(bad.errors['decoder.fields.2.endian'])
    t.ok(bad.errors['decoder.fields.2.scale'])
    t.ok(bad.errors['decoder.fields.3.type'])
    t.ok(bad.errors['decoder.fields.4.flags'])
  }
  const noValue = validateLayout({ encoding: 'hex', fields: [{ name: 'v', type: 'u8' }] })
  t.same(noValue, { ok: false, errors: { 'decoder.fields': 'a field named "value" is required' } })
  t.equal(validateLayout(null).ok, false)
  t.equal(validateLayout({ encoding: 'hex', fields: [] }).ok, false)
  const dup = validateLayout({
    encoding: 'hex',
    fields: [
      { name: 'value', type: 'u8' },
      { name: 'value', type: 'u8' },
    ],
  })
  t.ok(!dup.ok && dup.errors['decoder.fields.1.name'])
})

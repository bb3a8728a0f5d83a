// The well-known compact-format table (src/decode/known-formats.ts, asm/compact.ts):
// every entry loads with the signature it lists; a compact frame of a known product
// decodes with no full frame before; a format another meter of the same manufacturer
// taught is used only when the frame's data CRC agrees.
import t from 'tap'
import { loadWasmCore } from '../../src/decode/core.js'
import { decodeTelegramSync } from '../../src/decode/telegram.js'
import { S } from '../../src/decode/layout.js'
import { crc16 } from '../helpers/wmbus.js'
import {
  KNOWN_COMPACT_FORMATS,
  loadKnownFormats,
  manufacturerCode,
} from '../../src/decode/known-formats.js'
import { fullFrame } from '../helpers/wmbus.js'

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase()
const le16 = (v: number) => [v & 0xff, v >> 8]

/** Compact frame (CI 79) of a KAM water meter with records 04 13 / 02 5B / 44 13, data CRC set right or not. */
function compact(id: number, litres: number, goodCrc: boolean): string {
  const idb = Buffer.from(id.toString().padStart(8, '0'), 'hex').reverse()
  const v = Buffer.alloc(4)
  v.writeUInt32LE(litres)
  const hdr = Buffer.from('0413025B4413', 'hex')
  const full = Buffer.concat([
    Buffer.from('0413', 'hex'),
    v,
    Buffer.from('025B1200', 'hex'),
    Buffer.from('4413', 'hex'),
    v,
  ])
  const data = Buffer.concat([v, Buffer.from('1200', 'hex'), v])
  const dcrc = goodCrc ? crc16(full, 0, full.length) : 0x1234
  const body = Buffer.concat([
    Buffer.from('442D2C', 'hex'),
    idb,
    Buffer.from('1B1679', 'hex'),
    Buffer.from([...le16(crc16(hdr, 0, hdr.length)), ...le16(dcrc)]),
    data,
  ])
  return hex(Buffer.concat([Buffer.from([body.length]), body]))
}

t.test('every known format loads with its listed signature', async (t) => {
  const core = loadWasmCore() // loads the table itself (and throws if an entry is wrong)
  t.ok(KNOWN_COMPACT_FORMATS.length >= 15)
  for (const f of KNOWN_COMPACT_FORMATS) {
    const b = Buffer.from(f.headers, 'hex')
    t.equal(crc16(b, 0, b.length).toString(16).padStart(4, '0'), f.signature, f.products)
  }
  // a malformed entry is refused, not half kept
  t.throws(() =>
    loadKnownFormats(core, [
      { products: 'x', meters: ['KAM 16'], signature: '0000', headers: '0D13' },
    ]),
  )
  t.throws(() =>
    loadKnownFormats(core, [
      { products: 'x', meters: ['KAM 16'], signature: '0000', headers: '02FF20' },
    ]),
  )
  t.equal(manufacturerCode('KAM'), 0x2c2d)
})

t.test(
  'known product: decodes with no full frame; format source and data CRC are reported',
  async (t) => {
    const core = loadWasmCore()
    // Multical 21 short format a8ed: info, total, target, 2 one-byte records
    const sig = Buffer.from('02FF2004134413615B6167', 'hex')
    const data = Buffer.from('0000' + '40E20100' + 'A0860100' + '0C' + '11', 'hex')
    const full = Buffer.from(
      '02FF2000000413' + '40E20100' + '4413A0860100' + '615B0C' + '616711',
      'hex',
    )
    const body = Buffer.concat([
      Buffer.from('442D2C78563412' + '1B16' + '79', 'hex'),
      Buffer.from([...le16(crc16(sig, 0, sig.length)), ...le16(crc16(full, 0, full.length))]),
      data,
    ])
    const tel = hex(Buffer.concat([Buffer.from([body.length]), body]))
    const o = decodeTelegramSync(core, tel, null)
    t.equal(o.status, 'ok')
    if (o.status === 'ok') {
      t.equal(o.value, 123.456)
      t.equal(o.unit, 'm3')
    }
    t.equal(core.CTRL[S.FMT_SRC], 2, 'format from the known table')
    t.equal(core.CTRL[S.FMT_DCRC], 1, 'data CRC matches')
  },
)

t.test(
  'a format taught by another meter of the manufacturer needs a matching data CRC',
  async (t) => {
    const core = loadWasmCore()
    t.equal(decodeTelegramSync(core, fullFrame(11111111, 5), null).status, 'ok')
    const good = decodeTelegramSync(core, compact(22222222, 7000, true), null)
    t.equal(good.status, 'ok', 'another meter, same format, data CRC agrees')
    if (good.status === 'ok') t.equal(good.value, 7)
    t.equal(core.CTRL[S.FMT_SRC], 3)
    const bad = decodeTelegramSync(core, compact(33333333, 7000, false), null)
    t.equal(bad.status, 'rejected_undecodable', 'data CRC differs: not trusted')
    // its own meter's format is used whatever the data CRC (as before)
    const own = decodeTelegramSync(core, compact(11111111, 8000, false), null)
    t.equal(own.status, 'ok')
    t.equal(core.CTRL[S.FMT_SRC], 1)
    t.equal(core.CTRL[S.FMT_DCRC], 2, 'mismatch reported')
  },
)

t.test('knownPut never traps on arbitrary bytes', async (t) => {
  const core = loadWasmCore()
  let s = 0x1234567
  const r = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 8) & 0xff
  let kept = 0
  for (let i = 0; i < 5000; i++) {
    const n = r() % 100
    for (let k = 0; k < Math.min(n, core.FMT.length); k++) core.FMT[k] = r()
    const sig = core.knownPut(r() | (r() << 8), r(), n)
    if (sig >= 0) kept++
  }
  t.ok(kept <= 128, `table bounded (${kept} kept)`)
})

// Micro probe: raw core.begin() rate on one plain telegram (no host work).
import { performance } from 'node:perf_hooks'
import { loadWasmCore } from '../../src/decode/core.js'
import { writeHex } from '../../src/decode/telegram.js'

const hex =
  process.argv[2] ??
  '4E4401061010101002027A000040052F2F0E035040691500000B2B300300066D00790C7423400C78371204860BABC8FC100000000E833C8074000000000BAB3C0000000AFDC9FC0136022F2F2F2F2F'
const core = loadWasmCore()
const len = writeHex(core, hex)
for (let round = 0; round < 5; round++) {
  const N = 500_000
  const t0 = performance.now()
  for (let i = 0; i < N; i++) core.begin(len)
  const t1 = performance.now()
  for (let i = 0; i < N; i++) writeHex(core, hex)
  const t2 = performance.now()
  console.log(
    `begin: ${Math.round(N / ((t1 - t0) / 1000))}/s, writeHex: ${Math.round(N / ((t2 - t1) / 1000))}/s`,
  )
}

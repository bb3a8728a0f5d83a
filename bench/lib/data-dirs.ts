// Where a bench run's data directories go. Every server and ceiling makes its own under
// os.tmpdir() (children inherit it through TMPDIR), so setting TMPDIR here places them all.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export interface DataDirs {
  /** The parent every data directory of the run is made in. */
  root: string
  /** How they are placed, for the report's header. */
  placement: string
  /** Removes the parent (the run's end). */
  remove(): void
}

/**
 * Each data directory in a part of the disk of its own. On ext4 without a journal (the
 * machines we bench on), allocating an inode skips every inode of its block group freed in
 * the last minutes, reading each one's inode table block to see when: after a scenario's data
 * directory (tens of thousands of chDB files) was removed, the next scenario's files, made
 * in the same group, cost ~0.7 ms of kernel CPU each, ~70 % of chDB's INSERT thread
 * (`perf`: `recently_deleted`, `find_inode_bit`; docs/benchmarks.md, "The disk"). Whoever ran
 * next paid for whoever ran before, ceilings included. A parent marked as a top of directory
 * hierarchies (`chattr +T`) makes ext4 place each new directory in it in a little-used
 * group, as it does for directories made at the root. Elsewhere `chattr` fails and nothing
 * changes.
 */
export function spreadDataDirs(): DataDirs {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mf-bench-run-'))
  let placement = `${root} (not spread: chattr +T failed)`
  try {
    execFileSync('chattr', ['+T', root], { stdio: 'ignore' })
    placement = `${root}, each in a block group of its own (chattr +T)`
  } catch {
    // Not ext4, or no chattr: the directories stay where the filesystem puts them.
  }
  process.env.TMPDIR = root
  return { root, placement, remove: () => fs.rmSync(root, { recursive: true, force: true }) }
}

/** Files made by the placement probe, and the most they may cost together (see below). */
const PROBE_FILES = 48
const PROBE_MAX_MS = 3
const PROBE_TRIES = 6

/**
 * A fresh data directory under os.tmpdir() (`mf-bench-<prefix>-…`) where making files costs
 * what it costs on a fresh disk. Spread directories (above) still land, now and then, in a
 * group where freed inodes lie in wait: making 48 files in /tmp right after 36,000 were
 * removed took 4.3–21 ms, in a fresh group 0.7–1.1 ms (scratch, three rounds). So each
 * directory is tried with that many files first, and a slow one is left empty for the next
 * (removed with the run's parent). After six tries the fastest is taken.
 */
export function freshDataDir(prefix: string): string {
  let best = { dir: '', ms: Infinity }
  for (let i = 0; i < PROBE_TRIES; i++) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `mf-bench-${prefix}-`))
    const ms = probeFiles(dir)
    if (ms < best.ms) best = { dir, ms }
    if (ms <= PROBE_MAX_MS) break
  }
  return best.dir
}

/** Milliseconds to make PROBE_FILES files in `dir`, 12 to a directory, as a part does. */
function probeFiles(dir: string): number {
  const probe = path.join(dir, '.probe')
  const t0 = performance.now()
  fs.mkdirSync(probe)
  for (let i = 0; i < PROBE_FILES; i++) {
    const sub = path.join(probe, String(Math.floor(i / 12)))
    if (i % 12 === 0) fs.mkdirSync(sub)
    fs.writeFileSync(path.join(sub, String(i)), '')
  }
  const ms = performance.now() - t0
  fs.rmSync(probe, { recursive: true })
  return ms
}

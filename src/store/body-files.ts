// Large INSERT bodies reach the embedded engine through a file. chDB's raw insert hands a
// body over inline, after the statement's text, and it is walked before the format parser
// sees it: chdb-node counts its lines a byte at a time (`perf`: 14 % of an inline INSERT's
// samples), and the engine's cost grows with the body's punctuation, not only its size
// (2 MB of TabSeparated strings into a Null table: 11 ms plain, 23 ms with a `{` in every
// five characters). Read from a file (`INSERT … FROM INFILE`) the parser alone pays: 1,000
// telegram readings rows (2.5 MB of JSONEachRow) into a Null table took 9–10 ms against
// 15–17 inline (scratch, three rounds of 20). The crossing is near 50 KB: gateway readings
// rows into `readings` (merges stopped, data directory under `chattr +T`, two alternating
// rounds of 30), CPU per INSERT inline against through a file: 150 rows (30 KB) 2.34/2.40
// against 2.45/2.38 ms, 300 rows (63 KB) 2.58/2.64 against 2.53/2.46, 500 rows (107 KB)
// 2.95/3.02 against 2.63/2.53, 1,000 rows (214 KB) 3.96/3.82 against 2.90/2.81. (An earlier
// series put it at ~200 KB on a disk where every new file was dear, docs/benchmarks.md.)
//
// A file is written in place (pwrite over the last body, then truncated to length): 2.5 MB
// took 0.15–0.2 ms so, against ~3 ms as a new file (writeFileSync), and the main thread
// does it. One file per INSERT in flight, reused, each as large as its last body; they live
// in the data directory and are removed on close, or at the next start if the process died.
import fs from 'node:fs'
import path from 'node:path'

/** Bodies from this size go through a file. */
export const FILE_BODY_MIN_BYTES = 64 << 10

interface Slot {
  fd: number
  file: string
}

export class BodyFiles {
  private readonly free: Slot[] = []
  private readonly all: Slot[] = []
  private readonly prefix: string

  constructor(private readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true })
    removeOrphans(dir)
    this.prefix = `${process.pid}-${(instances++).toString(36)}-`
  }

  /**
   * Runs `fromFile` with the path of a file holding exactly `body`, its pieces in order and
   * `size` bytes in all (the file is kept for reuse), or `inline` if the file cannot be
   * written (a full or read-only disk must not fail an INSERT the engine could take as it is).
   */
  async with<T>(
    body: readonly Uint8Array[],
    size: number,
    fromFile: (file: string) => Promise<T>,
    inline: () => Promise<T>,
  ): Promise<T> {
    let slot: Slot | undefined
    try {
      slot = this.free.pop() ?? this.open()
      // The pieces in order, not joined first (libuv writes them all or fails).
      if (fs.writevSync(slot.fd, body as Uint8Array[], 0) !== size) throw new Error('short write')
      fs.ftruncateSync(slot.fd, size)
    } catch {
      if (slot) this.free.push(slot)
      return inline()
    }
    try {
      return await fromFile(slot.file)
    } finally {
      this.free.push(slot)
    }
  }

  close(): void {
    for (const s of this.all) {
      fs.closeSync(s.fd)
      fs.rmSync(s.file, { force: true })
    }
    this.all.length = 0
    this.free.length = 0
  }

  private open(): Slot {
    const file = path.join(this.dir, `${this.prefix}${this.all.length}.body`)
    const slot = { fd: fs.openSync(file, 'w+'), file }
    this.all.push(slot)
    return slot
  }
}

let instances = 0

/** Files left by processes that are gone (killed before `close`). */
function removeOrphans(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    const pid = Number(name.slice(0, name.indexOf('-')))
    if (Number.isInteger(pid) && pid > 0 && !alive(pid))
      fs.rmSync(path.join(dir, name), { force: true })
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

// Runs clickhouse-local from the chdb package's engine (libchdb.so) as a real ClickHouse
// server in this process: `chdb_query_cmdline` with --http_port/--listen_host/--path and a
// query that opens the listeners (`SYSTEM START LISTEN HTTP`) and then blocks on a read of
// a control FIFO. The query ends, and with it the server, when the FIFO is written.
//
// Why the odd thread start: ClickHouse checks on every parse that the current frame lies
// inside the calling thread's stack (pthread_getattr_np). koffi runs foreign calls on a
// stack of its own, so a direct call fails with TOO_DEEP_RECURSION. The engine therefore
// has to run on a thread started natively, and libc offers exactly one trampoline that
// calls an (int, pointer) function on a fresh stack: exit() running on_exit handlers,
// which receive (status, arg). A new pthread calls exit(argc); its handlers, last
// registered first, are chdb_query_cmdline(argc, argv) (the server, until the FIFO is
// written) and then pthread_exit, which ends that thread before exit() goes any further.
// The rest of the process never notices; the thread is reaped with pthread_tryjoin_np.
import koffi from 'koffi'
import { libchdbPath } from 'chdb/libchdb'

const RTLD_NOW = 2
const RTLD_NOLOAD = 4

interface Libc {
  dlopen(file: string, flags: number): unknown
  dlsym(handle: unknown, name: string): unknown
  strdup(s: string): unknown
  malloc(n: number): unknown
  onExit(fn: unknown, arg: unknown): number
  pthreadCreate(out: [bigint], attr: null, start: unknown, arg: unknown): number
  tryJoin(thread: bigint, ret: null): number
  mkfifo(path: string, mode: number): number
}

let libc: Libc | undefined

function bindLibc(): Libc {
  const c = koffi.load('libc.so.6')
  return {
    dlopen: c.func('void *dlopen(const char *file, int flags)'),
    dlsym: c.func('void *dlsym(void *handle, const char *name)'),
    strdup: c.func('void *strdup(const char *s)'),
    malloc: c.func('void *malloc(size_t n)'),
    onExit: c.func('int on_exit(void *fn, void *arg)'),
    pthreadCreate: c.func(
      'int pthread_create(_Out_ uint64_t *thread, void *attr, void *start, void *arg)',
    ),
    tryJoin: c.func('int pthread_tryjoin_np(uint64_t thread, void *ret)'),
    mkfifo: c.func('int mkfifo(const char *path, uint32_t mode)'),
  }
}

/** Creates a FIFO (named pipe) at `path`; throws with errno on failure. */
export function makeFifo(path: string): void {
  libc ??= bindLibc()
  if (libc.mkfifo(path, 0o600) !== 0) throw new Error(`mkfifo ${path}: errno ${koffi.errno()}`)
}

export interface EngineThread {
  /** True once the engine's query has returned (the server has stopped or failed to start). */
  finished(): boolean
}

/**
 * Starts clickhouse-local with `args` (argv without the program name) on a native thread.
 * Only one engine may run per process: libchdb binds one data path per process.
 */
export function startEngineThread(args: readonly string[]): EngineThread {
  libc ??= bindLibc()
  const c = libc
  const lib = libchdbPath()
  koffi.load(lib)
  const cmdline = c.dlsym(c.dlopen(lib, RTLD_NOW | RTLD_NOLOAD), 'chdb_query_cmdline')
  const self = c.dlopen('libc.so.6', RTLD_NOW | RTLD_NOLOAD)
  const exitFn = c.dlsym(self, 'exit')
  const pthreadExit = c.dlsym(self, 'pthread_exit')
  if (!cmdline || !exitFn || !pthreadExit) throw new Error(`cannot resolve entry points in ${lib}`)

  // argv lives for the life of the process: the engine keeps pointers into it.
  const argv = ['clickhouse', ...args]
  const block = c.malloc(8 * (argv.length + 1))
  koffi.encode(block, koffi.array('void *', argv.length + 1), [
    ...argv.map((a) => c.strdup(a)),
    null,
  ])

  // Handlers run last-registered first: the server, then the end of this thread.
  if (c.onExit(pthreadExit, null) !== 0 || c.onExit(cmdline, block) !== 0)
    throw new Error('on_exit failed')
  const thread: [bigint] = [0n]
  const rc = c.pthreadCreate(thread, null, exitFn, koffi.as(argv.length, 'void *'))
  if (rc !== 0) throw new Error(`pthread_create failed: ${rc}`)
  let done = false
  return {
    finished() {
      if (!done) done = c.tryJoin(thread[0], null) === 0
      return done
    },
  }
}

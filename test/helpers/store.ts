// An embedded Store (chDB) of a test file's own: a fresh data directory, opened again on
// demand (a restart on the same data), closed and removed at the end.
import fs from 'node:fs'
import type { Test } from 'tap'
import { MemoryCoord } from '../../src/coord/memory.js'
import { Store } from '../../src/store/store.js'
import type { Config } from '../../src/config/index.js'
import type { Sql } from '../../src/store/sql.js'
import { tmpDataDir } from './server.js'

export interface TmpStore {
  readonly store: Store
  /** Closes the store and opens the same data directory again (a clean restart). */
  reopen(): Promise<Store>
  /** Closes the store and removes its data directory. */
  close(): Promise<void>
}

export async function openTmpStore(): Promise<TmpStore> {
  const dir = tmpDataDir()
  const config = { DATA_DIR: dir } as Pick<
    Config,
    'DATA_DIR' | 'CLICKHOUSE_URL' | 'CLICKHOUSE_CLUSTER'
  >
  const open = () => Store.open(config, new MemoryCoord())
  let store = await open()
  return {
    get store() {
      return store
    },
    async reopen() {
      await store.close()
      return (store = await open())
    },
    async close() {
      await store.close()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * Counts the INSERTs into `table` through `sql` until the test ends (then the real method is
 * back): how many parts a change of many rows wrote.
 */
export function countInserts(t: Test, sql: Sql, table: string): () => number {
  const real = sql.insert.bind(sql)
  let n = 0
  sql.insert = async (to, body, opts) => {
    if (to === table) n++
    return real(to, body, opts)
  }
  t.teardown(() => {
    sql.insert = real
  })
  return () => n
}

// The store: one Sql transport (chDB or a ClickHouse server), migrations, id sequences,
// row versions and the group-commit writers. Repositories in this folder build on it.
import type { Config } from '../config/index.js'
import type { Coord } from '../coord/coord.js'
import { withLease, type LeaseWait } from '../coord/exclusive.js'
import { ChdbSql } from './chdb.js'
import { withReadingsPartsHeld } from './crash-window.js'
import { BlockPool } from './body-writer.js'
import { GroupCommit } from './group-commit.js'
import { readingsColumns } from './reading-row.js'
import { migrate } from './migrations.js'
import { markHoursMissedByACrash } from './rollup.js'
import { restoreStatusMissedByACrash } from './status.js'
import { rollupCurrent, rollupFeed } from './rollup-feed.js'
import { ServerSql } from './server.js'
import type { Sql } from './sql.js'

/** Tables whose rows get integer ids from a sequence (id column `id`, or `workspace_id`). */
const SEQUENCES: Record<string, string> = {
  workspaces: 'workspace_id',
  users: 'id',
  api_tokens: 'id',
  meter_groups: 'id',
  meters: 'id',
  meter_exchanges: 'id',
  event_subscriptions: 'id',
  mails: 'id',
  alert_rules: 'id',
  alerts: 'id',
  imports: 'id',
  transfers: 'id',
  mqtt_subscriptions: 'id',
}

/** Migrations run on one instance at a time; the others wait up to 2 minutes. */
const MIGRATION_LEASE: LeaseWait = {
  ttlMs: 120_000,
  pollMs: 200,
  attempts: 600,
  timeout: () => new Error('timed out waiting for another instance to finish migrations'),
}

export class Store {
  readonly readings: GroupCommit
  readonly statusReports: GroupCommit
  /** Blocks for the bodies of `readings` writes, handed back once their INSERT ended. */
  readonly bodyBlocks = new BlockPool()
  /**
   * Whether a write to `readings` hands the rollup its feed lines as the companion text
   * (rollup-feed.ts; the embedded engine); otherwise the readings rows are all it takes.
   */
  readonly rollupFedApart: boolean
  private lastVersion = 0

  private constructor(
    readonly sql: Sql,
    private readonly coord: Coord,
  ) {
    // Embedded: stored rows go on to the rollup, written apart (rollup-feed.ts), as the
    // feed rows their writers gave along (every write gives them: the rows themselves are
    // TabSeparated, the feed's are RowBinary, feed-rows.ts).
    const feed = rollupFeed(sql)
    this.rollupFedApart = feed !== null
    // Both tables are read under FINAL, argMax, LIMIT 1 BY or GROUP BY (history.ts,
    // readings-query.ts, status.ts); the crash checks count physical rows on purpose.
    const insert = { collapseInMerges: true }
    this.readings = new GroupCommit(sql, 'readings', {
      insert: { ...insert, columns: readingsColumns(feed !== null) },
      ...(feed ? { stored: (_rows, feedRows) => feed.addRows(feedRows) } : {}),
    })
    this.statusReports = new GroupCommit(sql, 'status_reports', { insert })
  }

  static async open(
    config: Pick<Config, 'DATA_DIR' | 'CLICKHOUSE_URL' | 'CLICKHOUSE_CLUSTER'>,
    coord: Coord,
  ): Promise<Store> {
    let sql: Sql
    if (config.CLICKHOUSE_URL) {
      await ServerSql.ensureDatabase(config.CLICKHOUSE_URL)
      sql = new ServerSql(config.CLICKHOUSE_URL, { cluster: config.CLICKHOUSE_CLUSTER })
    } else sql = new ChdbSql(config.DATA_DIR)
    const store = new Store(sql, coord)
    // Instances starting together must not run the same DDL at once.
    await withLease(coord, 'migrations', MIGRATION_LEASE, () =>
      migrate(sql, { cluster: config.CLICKHOUSE_CLUSTER }),
    )
    // The embedded engine runs in this process, so a kill may have cut an INSERT between a
    // readings block and its rollup block; a server finishes its INSERTs on its own.
    if (!config.CLICKHOUSE_URL)
      await withReadingsPartsHeld(sql, async () => {
        await markHoursMissedByACrash(sql)
        await restoreStatusMissedByACrash(sql)
      })
    return store
  }

  /**
   * A new id for `table`, unique across instances sharing the coordination store. The
   * sequence starts above the table's current maximum, also after Redis lost its keys.
   */
  async nextId(table: keyof typeof SEQUENCES): Promise<number> {
    const col = SEQUENCES[table]
    return this.coord.nextId(table, async () => {
      const [r] = await this.sql.query<{ m: string }>(
        `SELECT toUInt64(max(${col})) AS m FROM ${table}`,
      )
      return Number(r?.m ?? 0)
    })
  }

  /** `count` new consecutive ids for `table` reserved in one step; returns the first. */
  async nextIds(table: keyof typeof SEQUENCES, count: number): Promise<number> {
    const col = SEQUENCES[table]
    return this.coord.nextIds(table, count, async () => {
      const [r] = await this.sql.query<{ m: string }>(
        `SELECT toUInt64(max(${col})) AS m FROM ${table}`,
      )
      return Number(r?.m ?? 0)
    })
  }

  /**
   * Row version of a mutable row (meters, tenants, subscriptions, alerts, ...): from the
   * coordination store's hybrid logical clock (max(last issued + 1, this clock in µs)), so
   * every instance's later update gets a higher version whatever their wall clocks say.
   * Costs one coordination call; the ingest hot path does not use it.
   */
  async sharedVersion(): Promise<number> {
    const v = await this.coord.hlc('row-version', Math.max(Date.now() * 1000, this.lastVersion + 1))
    this.lastVersion = Math.max(this.lastVersion, v)
    return v
  }

  /** Version of a new state of a stored row: above the stored one (HLC over the row). */
  versionAfter(stored: number | string): number {
    const v = Math.max(this.version(), Number(stored) + 1)
    this.lastVersion = Math.max(this.lastVersion, v)
    return v
  }

  /**
   * Versions issued from now on are above `v`: a version another instance wrote (a meter's
   * stamp, lease-stamps.ts), so that this instance's later rows of the meter come after its
   * rows whatever the two wall clocks say (the receive step of a hybrid logical clock).
   */
  observeVersion(v: number): void {
    if (v > this.lastVersion) this.lastVersion = v
  }

  /** Monotonic row version for ReplacingMergeTree (µs since epoch, never repeating here). */
  version(): number {
    const v = Math.max(Date.now() * 1000, this.lastVersion + 1)
    this.lastVersion = v
    return v
  }

  /** Everything handed to the writers is stored, and counted in the rollup. */
  async flush(): Promise<void> {
    await Promise.all([this.readings.flush(), this.statusReports.flush()])
    await rollupCurrent(this.sql)
  }

  async close(): Promise<void> {
    await this.flush()
    await this.sql.close()
  }
}

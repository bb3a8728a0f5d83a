// The scheduler line: a croner job every SCHEDULER_INTERVAL_S. With several instances
// sharing Redis, a lease makes sure exactly one line runs at a time; every run is recorded
// in `scheduler_runs`, which is what /ping reads as the heartbeat.
//
// Every pass, the line's and a manual one (POST /admin/v1/scheduler/run) alike, holds the
// pass lease `scheduler:pass`, renewed while the pass runs, so two passes never overlap
// across instances however long one takes (two at once could open an alert twice or send a
// transfer twice). A manual run waits for another instance's pass to end, then runs.
import crypto from 'node:crypto'
import os from 'node:os'
import { Cron } from 'croner'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { Coord } from '../coord/coord.js'
import { HeldLease } from '../coord/held-lease.js'
import { apiError } from '../errors.js'
import { lastSchedulerRun, recordSchedulerRun } from '../store/scheduler-runs.js'
import type { Sql } from '../store/sql.js'

export interface RunSummary {
  ran_at: string
  pruned: number
  alerts_opened: number
  alerts_resolved: number
  transfers: number
}

/** A task contributes counters to the run summary. */
export type SchedulerTask = (now: number) => Promise<Partial<Omit<RunSummary, 'ran_at'>>>

export interface HeartbeatState {
  last_run_at: string | null
  ever_ran: boolean
  stale: boolean
}

export interface SchedulerOptions {
  /** TTL of the pass lease (renewed every third of it while a pass runs); default 2 periods + 1 s, at most 30 s. */
  passLeaseMs?: number
  /** How long a manual run waits for another instance's pass before answering 409. */
  manualWaitMs?: number
}

const PASS_LEASE = 'scheduler:pass'

export class Scheduler {
  private readonly tasks: { name: string; run: SchedulerTask }[] = []
  private cron: Cron | null = null
  // Host and pid name the instance in `scheduler_runs`, so an operator sees which one ran.
  private readonly owner = `${os.hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`
  /** The pass of this instance in progress; null when the pass lease was held elsewhere. */
  private running: Promise<RunSummary | null> | null = null
  private readonly passLeaseMs: number
  private readonly manualWaitMs: number

  constructor(
    private readonly sql: Sql,
    private readonly coord: Coord,
    private readonly clock: Clock,
    private readonly intervalS: number,
    private readonly log: Logger,
    opts: SchedulerOptions = {},
  ) {
    // Short enough that a holder killed mid-pass is replaced within about two periods, as
    // the line lease is (renewal keeps a long pass alive); never above 30 s.
    this.passLeaseMs = opts.passLeaseMs ?? Math.min(30_000, intervalS * 2000 + 1000)
    this.manualWaitMs = opts.manualWaitMs ?? 30_000
  }

  addTask(name: string, run: SchedulerTask): void {
    this.tasks.push({ name, run })
  }

  start(): void {
    this.cron = new Cron('* * * * * *', { interval: this.intervalS, protect: true }, () =>
      this.tick(),
    )
    // Run once right away so a fresh instance reports a heartbeat without waiting a period.
    void this.tick()
  }

  private async tick(): Promise<void> {
    try {
      // The lease outlives one period a little, so a dead holder is replaced after ~2 periods.
      if (!(await this.coord.lease('scheduler', this.owner, this.intervalS * 2000 + 1000))) return
      // Another instance's manual pass holds the pass lease: this period is skipped.
      await this.shared(false)
    } catch (err) {
      this.log.error({ err }, 'scheduler run failed')
    }
  }

  /** One pass now (POST /admin/v1/scheduler/run); concurrent callers share it. */
  async runOnce(): Promise<RunSummary> {
    for (;;) {
      const summary = await this.shared(true)
      // null: the shared pass was a tick that found the lease taken; run one of our own.
      if (summary) return summary
    }
  }

  private shared(wait: boolean): Promise<RunSummary | null> {
    this.running ??= this.leasedPass(wait).finally(() => {
      this.running = null
    })
    return this.running
  }

  /** A pass under the pass lease; without `wait`, null when another instance holds it. */
  private async leasedPass(wait: boolean): Promise<RunSummary | null> {
    const until = Date.now() + (wait ? this.manualWaitMs : 0)
    let lease = await HeldLease.acquire(this.coord, PASS_LEASE, this.owner, this.passLeaseMs)
    while (!lease && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50))
      lease = await HeldLease.acquire(this.coord, PASS_LEASE, this.owner, this.passLeaseMs)
    }
    if (!lease) {
      if (!wait) return null
      throw apiError('Conflict', 'A scheduler pass is running on another instance; try again.')
    }
    try {
      return await this.pass(lease)
    } finally {
      await lease.release()
    }
  }

  private async pass(lease: HeldLease): Promise<RunSummary> {
    const now = this.clock.now()
    const summary: RunSummary = {
      ran_at: new Date(now).toISOString(),
      pruned: 0,
      alerts_opened: 0,
      alerts_resolved: 0,
      transfers: 0,
    }
    for (const t of this.tasks) {
      if (lease.lost) {
        // Stalled past the lease: another instance may be passing now; stop here.
        this.log.warn({ task: t.name }, 'scheduler pass lease lost; pass cut short')
        break
      }
      try {
        const part = await t.run(now)
        for (const k of ['pruned', 'alerts_opened', 'alerts_resolved', 'transfers'] as const)
          summary[k] += part[k] ?? 0
      } catch (err) {
        this.log.error({ err, task: t.name }, 'scheduler task failed')
      }
    }
    await recordSchedulerRun(this.sql, { ...summary, ran_at: now, instance: this.owner })
    return summary
  }

  async stop(): Promise<void> {
    this.cron?.stop()
    await this.running?.catch(() => {})
    await this.coord.release('scheduler', this.owner).catch(() => {})
  }
}

/** Heartbeat as /ping reports it: stale after three missed periods. */
export async function heartbeat(
  sql: Sql,
  clock: Clock,
  intervalS: number,
): Promise<HeartbeatState> {
  const last = await lastSchedulerRun(sql)
  if (last === null) return { last_run_at: null, ever_ran: false, stale: true }
  return {
    last_run_at: last,
    ever_ran: true,
    stale: clock.now() - Date.parse(last) > 3 * intervalS * 1000,
  }
}

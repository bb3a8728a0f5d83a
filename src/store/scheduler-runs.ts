// One row per scheduler pass (any instance): what it did, when and where. /ping's heartbeat
// and the scheduler-lag metric read the newest.
import { chTime, isoFromCh, type Sql } from './sql.js'

export interface SchedulerRun {
  ran_at: number
  instance: string
  pruned: number
  alerts_opened: number
  alerts_resolved: number
  transfers: number
}

export async function recordSchedulerRun(sql: Sql, run: SchedulerRun): Promise<void> {
  await sql.insert('scheduler_runs', JSON.stringify({ ...run, ran_at: chTime(run.ran_at) }))
}

/** When the last pass of any instance ran (ISO), or null before the first. */
export async function lastSchedulerRun(sql: Sql): Promise<string | null> {
  const [r] = await sql.query<{ n: string; last: string }>(
    'SELECT count() AS n, max(ran_at) AS last FROM scheduler_runs',
  )
  return r && Number(r.n) > 0 ? isoFromCh(r.last)! : null
}

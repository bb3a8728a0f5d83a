// The scheduler's periodic tasks: retention, alerts, transfers, failing imports whose
// instance died while they ran, and meter.created events a stop left unsent. The scheduler
// line (scheduler.ts) runs them on one instance at a time.
import { evaluateAlerts } from './alerts.js'
import { announceMissedMeters } from './announcements.js'
import { pruneRetention } from './retention.js'
import type { Scheduler } from './scheduler.js'
import type { TaskDeps } from './deps.js'
import { runDueTransfers } from './transfers.js'

export function addSchedulerTasks(scheduler: Scheduler, s: TaskDeps): void {
  scheduler.addTask('retention', (now) => pruneRetention(s, now))
  scheduler.addTask('alerts', (now) => evaluateAlerts(s, now))
  scheduler.addTask('transfers', (now) => runDueTransfers(s, now))
  // Imports whose instance died while they ran (their lease lapsed) are failed.
  scheduler.addTask('imports', async () => {
    await s.imports.failInterrupted()
    return {}
  })
  scheduler.addTask('announcements', async (now) => {
    await announceMissedMeters(s, now)
    return {}
  })
}

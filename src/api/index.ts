import type { Router } from '../http/router.js'
import type { ApiDeps } from './deps.js'
import { registerGroups } from './groups.js'
import { registerMeters } from './meters.js'
import { registerPing } from './ping.js'
import { registerReadings } from './readings.js'
import { registerReport } from './report.js'
import { registerStatusReports } from './status-reports.js'
import { registerWebhookIngest } from './webhooks.js'

/** Every /api/v1 route group. */
export function registerApi(router: Router, s: ApiDeps): void {
  registerPing(router, s)
  registerReport(router, s)
  registerMeters(router, s)
  registerGroups(router, s)
  registerReadings(router, s)
  registerStatusReports(router, s)
  registerWebhookIngest(router, s)
}

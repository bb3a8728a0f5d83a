import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import type { AdminDeps } from './deps.js'
import { adminRoute } from './guard.js'

export function registerSchedulerAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'scheduler'>,
): void {
  adminRoute(router, s, {
    method: 'POST',
    path: '/scheduler/run',
    summary: 'Run one scheduler pass now',
    cli: {
      name: 'scheduler:run',
      summary: 'Run one scheduler pass now (retention, alerts, transfers).',
    },
    handler: async () => json(200, { data: await s.scheduler.runOnce() }),
  })
}

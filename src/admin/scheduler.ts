import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import type { Services } from '../services.js'
import { adminRoute } from './guard.js'

export function registerSchedulerAdmin(router: Router, s: Services): void {
  adminRoute(router, s, 'POST', '/scheduler/run', async () =>
    json(200, { data: await s.scheduler.runOnce() }),
  )
}

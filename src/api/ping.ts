// GET /api/v1/ping: authenticated liveness with the scheduler heartbeat. `degraded` is still
// HTTP 200: requests are served correctly, only pruning and alerting have stopped.
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { heartbeat } from '../scheduler/scheduler.js'
import type { ApiDeps } from './deps.js'
import { tokenRoute } from './route.js'

export function registerPing(
  router: Router,
  s: Pick<ApiDeps, 'auth' | 'clock' | 'config' | 'store'>,
): void {
  tokenRoute(router, s.auth, {
    method: 'GET',
    path: '/api/v1/ping',
    summary: 'Authenticated liveness probe with scheduler heartbeat',
    handler: async () => {
      const scheduler = await heartbeat(s.store.sql, s.clock, s.config.SCHEDULER_INTERVAL_S)
      return json(200, {
        status: scheduler.ever_ran && !scheduler.stale ? 'ok' : 'degraded',
        application: 'meterflow',
        time: new Date(s.clock.now()).toISOString(),
        scheduler,
      })
    },
  })
  router.route({
    method: 'GET',
    path: '/healthz',
    summary: 'Liveness without authentication',
    auth: 'none',
    handler: () => json(200, { status: 'ok' }),
  })
}

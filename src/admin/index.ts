import type { Router } from '../http/router.js'
import type { Services } from '../services.js'
import { registerSchedulerAdmin } from './scheduler.js'
import { registerTenantAdmin } from './tenants.js'

/** Every /admin/v1 route group. */
export function registerAdmin(router: Router, s: Services): void {
  registerTenantAdmin(router, s)
  registerSchedulerAdmin(router, s)
}

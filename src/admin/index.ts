import type { Router } from '../http/router.js'
import type { AdminDeps } from './deps.js'
import { registerEventAdmin } from './events.js'
import { registerSchedulerAdmin } from './scheduler.js'
import { registerTenantAdmin } from './tenants.js'
import { registerWebhookAdmin } from './webhooks.js'
import { registerMeterAdmin } from './meters.js'
import { registerProfileAdmin } from './profiles.js'
import { registerAlertAdmin } from './alerts.js'
import { registerImportAdmin } from './imports.js'
import { registerTransferAdmin } from './transfers.js'
import { registerJobAdmin } from './jobs.js'
import { registerPresetAdmin } from './presets.js'
import { registerMqttAdmin } from './mqtt.js'
import { registerSqlAccessAdmin } from './sql-access.js'
import { registerDecodeAdmin } from './decode.js'

/** Every /admin/v1 route group. */
export function registerAdmin(router: Router, s: AdminDeps): void {
  // In the order of `meterflow help`, whose command table follows the routes (openapi/cli.ts).
  registerTenantAdmin(router, s)
  registerWebhookAdmin(router, s)
  registerPresetAdmin(router, s)
  registerMqttAdmin(router, s)
  registerEventAdmin(router, s)
  registerMeterAdmin(router, s) // with the key quarantine
  registerProfileAdmin(router, s)
  registerAlertAdmin(router, s)
  registerImportAdmin(router, s)
  registerTransferAdmin(router, s)
  registerSchedulerAdmin(router, s)
  registerJobAdmin(router, s)
  registerSqlAccessAdmin(router, s)
  registerDecodeAdmin(router, s)
}

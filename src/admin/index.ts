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
import { registerQuarantineAdmin } from './quarantine.js'

/** Every /admin/v1 route group. */
export function registerAdmin(router: Router, s: AdminDeps): void {
  registerTenantAdmin(router, s)
  registerSchedulerAdmin(router, s)
  registerWebhookAdmin(router, s)
  registerMeterAdmin(router, s)
  registerProfileAdmin(router, s)
  registerAlertAdmin(router, s)
  registerImportAdmin(router, s)
  registerTransferAdmin(router, s)
  registerJobAdmin(router, s)
  registerEventAdmin(router, s)
  registerPresetAdmin(router, s)
  registerMqttAdmin(router, s)
  registerSqlAccessAdmin(router, s)
  registerDecodeAdmin(router, s)
  registerQuarantineAdmin(router, s)
}

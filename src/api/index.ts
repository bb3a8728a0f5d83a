import type { Router } from '../http/router.js'
import type { Services } from '../services.js'
import { registerPing } from './ping.js'
import { registerWebhookIngest } from './webhooks.js'

/** Every /api/v1 route group. */
export function registerApi(router: Router, s: Services): void {
  registerPing(router, s)
  registerWebhookIngest(router, s)
}

// The operator stage: webhook endpoint repository, the import runner, and the scheduler
// tasks (retention, alerts, transfers). Routes are registered by api/ and admin/.
import { ImportRunner } from '../jobs/imports.js'
import type { Services } from '../services.js'
import type { Stage } from '../stages.js'
import { WebhookRepo } from '../webhooks/repo.js'
import { evaluateAlerts } from './alerts.js'
import { pruneRetention } from './retention.js'
import { runDueTransfers } from './transfers.js'

export async function operatorStage(s: Services): Promise<Stage> {
  const webhooks = new WebhookRepo(s.store, s.coord, () => s.clock.now())
  await webhooks.init()
  s.webhooks = webhooks
  const imports = new ImportRunner(s)
  s.imports = imports
  s.scheduler.addTask('retention', (now) => pruneRetention(s, now))
  s.scheduler.addTask('alerts', (now) => evaluateAlerts(s, now))
  s.scheduler.addTask('transfers', (now) => runDueTransfers(s, now))
  // Imports whose instance died while they ran (their lease lapsed) are failed.
  s.scheduler.addTask('imports', async () => {
    await imports.failInterrupted()
    return {}
  })
  return {
    name: 'operator',
    start: async () => void (await imports.failInterrupted()),
    stop: () => imports.drain(),
  }
}

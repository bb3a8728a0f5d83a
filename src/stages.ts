// Stages that plug into the app beyond the foundation (decoders, ingest, events, ...). Each
// is built from the shared services, may attach to the uWS app, and is started and stopped
// with the app. Add a stage here; the composition root stays unchanged.
import type uWS from 'uWebSockets.js'
import { buildEventsStage } from './events/stage.js'
import { buildIngestStage } from './ingest/stage.js'
import { operatorStage } from './scheduler/stage.js'
import type { Services } from './services.js'

export interface Stage {
  name: string
  configureHttp?(app: uWS.TemplatedApp): void
  start?(): Promise<void> | void
  /** Called on shutdown after HTTP has drained, in reverse order of building. */
  stop?(): Promise<void> | void
}

export async function buildStages(s: Services): Promise<Stage[]> {
  const stages: Stage[] = []
  // First: it replaces s.outbox with the durable one before any other stage keeps a
  // reference, and, stopped last, it still takes events other stages emit while stopping.
  stages.push(await buildEventsStage(s))
  stages.push(await buildIngestStage(s))
  stages.push(await operatorStage(s))
  return stages
}

// Stages that plug into the app beyond the foundation (decoders, ingest, events, ...). Each
// is built from the shared services, may attach to the uWS app, and is started and stopped
// with the app. Add a stage here; the composition root stays unchanged.
import type uWS from 'uWebSockets.js'
import { buildEventsStage } from './events/stage.js'
import type { Router } from './http/router.js'
import { buildIngestStage } from './ingest/stage.js'
import { buildMqttStage } from './mqtt/stage.js'
import { buildObservabilityStage } from './observability/stage.js'
import { buildOpenApiStage } from './openapi/stage.js'
import { operatorStage } from './scheduler/stage.js'
import type { Services } from './services.js'
import { buildStreamStage } from './stream/stage.js'

export interface Stage {
  name: string
  configureHttp?(app: uWS.TemplatedApp): void
  /** Adds the stage's routes; called after the API and admin routes are registered. */
  registerRoutes?(router: Router): void
  start?(): Promise<void> | void
  /** Called on shutdown after HTTP has drained, in reverse order of building. */
  stop?(): Promise<void> | void
}

export async function buildStages(s: Services): Promise<Stage[]> {
  const stages: Stage[] = []
  // First: it replaces s.outbox with the durable one before any other stage keeps a
  // reference, and, stopped last, it still takes events other stages emit while stopping.
  stages.push(await buildEventsStage(s))
  const ingest = await buildIngestStage(s)
  s.decoder = ingest.decoder // for fault tests (crashOneWorkerForTest) and metrics
  stages.push(ingest)
  stages.push(await operatorStage(s))
  stages.push(buildOpenApiStage(s))
  stages.push(buildObservabilityStage(s, { decoder: ingest.decoder }))
  // After ingest and metrics; stopped before ingest, so a message in hand is stored and acked.
  stages.push(buildMqttStage(s))
  // Last, so stopped first: streamed messages in flight are answered before ingest stops.
  const stream = buildStreamStage(s)
  s.stream = stream
  stages.push(stream)
  return stages
}

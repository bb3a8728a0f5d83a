// Stages that plug into the app beyond the foundation (decoders, ingest, events, ...). Each
// is built from the shared services, may attach to the uWS app, and is started and stopped
// with the app. Add a stage here; the composition root stays unchanged.
import type uWS from 'uWebSockets.js'
import type { Services } from './services.js'

export interface Stage {
  name: string
  configureHttp?(app: uWS.TemplatedApp): void
  start?(): Promise<void> | void
  /** Called on shutdown after HTTP has drained, in reverse order of building. */
  stop?(): Promise<void> | void
}

export async function buildStages(_s: Services): Promise<Stage[]> {
  return []
}

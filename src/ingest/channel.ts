// What an ingest call looks like from outside, for observers (node:diagnostics_channel):
// /metrics counts batches, outcomes and latency without wrapping the pipeline.
import diagnostics_channel from 'node:diagnostics_channel'
import type { IngestOutcome, IngestRequest } from './types.js'

/** Context of one traced call; `pipeline` tells apps sharing a process apart. */
export interface IngestTrace {
  pipeline: object
  req: IngestRequest
  result?: IngestOutcome
  error?: unknown
}

export const ingestChannel = diagnostics_channel.tracingChannel<IngestTrace, IngestTrace>(
  'meterflow:ingest',
)

// A workspace's meters in memory, by identifier and by id: what the ingest path resolves
// identifiers with (MeterRepo), and what creations and other instances' changes update.
import type { Meter } from './meter-row.js'

/** A workspace's meters by identifier and by id (MeterRepo's index). */
export interface WorkspaceIndex {
  byIdentifier: Map<string, Meter>
  byId: Map<number, Meter>
}

/** A meter's current version into the index (its identifier may have changed). */
export function reindex(idx: WorkspaceIndex, m: Meter): void {
  const old = idx.byId.get(m.id)
  if (old && old.meter_identifier !== m.meter_identifier)
    idx.byIdentifier.delete(old.meter_identifier)
  idx.byId.set(m.id, m)
  idx.byIdentifier.set(m.meter_identifier, m)
}

/** A meter deleted: out of the index, under the identifier it had here too. */
export function unindex(idx: WorkspaceIndex, m: Meter): void {
  const old = idx.byId.get(m.id)
  idx.byId.delete(m.id)
  for (const name of [old?.meter_identifier, m.meter_identifier])
    if (name !== undefined && idx.byIdentifier.get(name)?.id === m.id) idx.byIdentifier.delete(name)
}

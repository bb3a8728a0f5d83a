// Operator API: the mapping presets (src/presets) with their mapping and a sample message,
// so an operator can see what `{"preset": name}` will store before using it.
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { MAPPING_PRESETS } from '../presets/presets.js'
import type { AdminDeps } from './deps.js'
import { adminRoute } from './guard.js'

export function registerPresetAdmin(router: Router, s: Pick<AdminDeps, 'adminToken'>): void {
  adminRoute(router, s, {
    method: 'GET',
    path: '/mapping-presets',
    summary: 'Mapping presets usable by name ({preset}) with their mapping and a sample message',
    cli: {
      name: 'presets:list',
      summary: 'List the mapping presets (chirpstack-v4, ...) with their mapping and a sample.',
    },
    handler: () => json(200, { data: MAPPING_PRESETS }),
  })
}

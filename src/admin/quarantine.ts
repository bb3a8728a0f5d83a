// Operator API: a meter's wM-Bus key quarantine (docs/decoders.md "Key diagnostics"): the
// telegrams waiting for the right key, so an operator sees what a key PUT would replay.
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import type { AdminDeps } from './deps.js'
import { adminRoute, idParam, notFound } from './guard.js'

export function registerQuarantineAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'keyQuarantine' | 'meters'>,
): void {
  adminRoute(router, s, {
    method: 'GET',
    path: '/meters/:meter/quarantine',
    summary: 'wM-Bus telegrams kept for want of a key, replayed by the next key PUT',
    cli: {
      name: 'meters:quarantine',
      summary: 'wM-Bus telegrams kept for want of a key (replayed by the next key PUT).',
    },
    handler: async (req) => {
      const id = idParam(req, 'meter')
      const m = (await s.meters.findAnyById(id)) ?? notFound('meter', id)
      const rows = s.keyQuarantine ? await s.keyQuarantine.list(m.workspace_id, m.id) : []
      return json(200, {
        data: rows.map((r) => ({
          recorded_at: r.recorded_at_text,
          telegram: r.telegram,
          reason: r.reason,
          received_at: new Date(r.received_at).toISOString(),
        })),
      })
    },
  })
}

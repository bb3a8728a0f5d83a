// Operator API: the telegram analyzer (POST /admin/v1/decode {telegram, key?}). A telegram
// that is not a hex string is a 422 naming the field; any hex telegram gets its analysis
// (src/decode/analyze.ts), including which layer failed and why.
import { Type } from '@sinclair/typebox'
import { validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { analyzeTelegram } from '../decode/analyze.js'
import type { AdminDeps } from './deps.js'
import { adminRoute } from './guard.js'

export const DecodeBody = Type.Object(
  {
    telegram: Type.String({ minLength: 1, maxLength: 8192 }),
    key: Type.Optional(
      Type.Union([Type.String({ pattern: '^([0-9a-fA-F]{32}|[0-9a-fA-F]{16})$' }), Type.Null()]),
    ),
  },
  { additionalProperties: false },
)

export function registerDecodeAdmin(router: Router, s: Pick<AdminDeps, 'adminToken'>): void {
  adminRoute(router, s, {
    method: 'POST',
    path: '/decode',
    summary: 'Analyze a wM-Bus telegram: layers, security, records, register or the failing layer',
    body: DecodeBody,
    handler: async (req, { checkBody }) => {
      const b = checkBody()
      const telegram = b.telegram.replace(/[\s_|#]/g, '') // separators as in logged telegrams
      if (!/^[0-9a-fA-F]+$/.test(telegram))
        throw validationError({ telegram: ['The telegram field must be hexadecimal.'] })
      // a fresh decoder per call: no formats learnt from earlier analyses
      return json(200, { data: analyzeTelegram(telegram, b.key ?? null) })
    },
  })
}

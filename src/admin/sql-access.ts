// Operator API: the SQL that creates a read-only ClickHouse user for one workspace's data
// (docs/data-teams.md). Answers the statements with a fresh password; nothing is executed
// or stored, so the password appears only in this answer.
import crypto from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import type { AdminDeps } from './deps.js'
import { sqlAccessStatements } from '../store/sql-access.js'
import { adminRoute, idParam, notFound } from './guard.js'

export function registerSqlAccessAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'config' | 'tenants'>,
): void {
  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/sql-access',
    summary:
      'SQL creating a read-only ClickHouse user limited to the workspace by a row policy (not executed; docs/data-teams.md)',
    query: [{ name: 'user', schema: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$' }) }],
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      if (!(await s.tenants.getWorkspace(ws))) notFound('workspace', ws)
      const user = req.query.get('user') ?? `meterflow_ws_${ws}`
      if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(user))
        throw validationError({ user: ['The user must be letters, digits and _ (64 at most).'] })
      const url = s.config.CLICKHOUSE_URL
      const database = url ? new URL(url).pathname.replace(/^\//, '') || 'default' : 'default'
      const password = crypto.randomBytes(18).toString('base64url')
      return json(200, {
        data: {
          user,
          password,
          database,
          embedded: !url,
          statements: sqlAccessStatements({
            workspaceId: ws,
            database,
            cluster: s.config.CLICKHOUSE_CLUSTER,
            user,
            password,
          }),
        },
      })
    },
  })
}

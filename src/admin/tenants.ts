// Operator API: workspaces, users and API tokens (operator-api.md, "Workspaces and members",
// "API tokens"). Token secrets appear in the create response only; a hash is stored.
import crypto from 'node:crypto'
import { Type } from '@sinclair/typebox'
import { apiError, validationError } from '../errors.js'
import { hashToken, SCOPES } from '../http/auth.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import type { AdminDeps } from './deps.js'
import { adminRoute, idParam, notFound } from './guard.js'

const NullableInt = Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])
const WorkspaceFields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  plan_meter_limit: Type.Optional(NullableInt),
  provision_cap_per_hour: Type.Optional(Type.Integer({ minimum: 0 })),
  retention_days: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
  /** Days the wM-Bus key quarantine keeps telegrams (docs/decoders.md); null: the default. */
  quarantine_retention_days: Type.Optional(
    Type.Union([Type.Integer({ minimum: 1, maximum: 3650 }), Type.Null()]),
  ),
}
export const WorkspaceCreate = Type.Object(WorkspaceFields, { additionalProperties: false })
export const WorkspacePatch = Type.Partial(Type.Object(WorkspaceFields), {
  additionalProperties: false,
})
export const UserCreate = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 320, pattern: '^[^@\\s]+@[^@\\s]+$' }),
    owner: Type.Optional(Type.Boolean()),
    permissions: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
)
export const UserPatch = Type.Object(
  { owner: Type.Optional(Type.Boolean()), permissions: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false },
)
export const TokenCreate = Type.Object(
  {
    user_id: Type.Integer({ minimum: 1 }),
    name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
    scopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), { minItems: 1 }),
    expires_at: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
    rate_limit_per_minute: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)

export function newSecret(prefix: string): string {
  return `${prefix}_${crypto.randomBytes(24).toString('base64url')}`
}

export function registerTenantAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'auth' | 'clock' | 'coord' | 'tenants'>,
): void {
  const { tenants } = s
  const workspace = async (id: number) =>
    (await tenants.getWorkspace(id)) ?? notFound('workspace', id)

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces',
    summary: 'Create a workspace',
    body: WorkspaceCreate,
    success: 201,
    cli: { name: 'workspaces:create', summary: 'Create a workspace (tenant).' },
    handler: async (req, { checkBody }) => {
      const b = checkBody()
      const w = await tenants.createWorkspace({
        name: b.name,
        plan_meter_limit: b.plan_meter_limit ?? null,
        provision_cap_per_hour: b.provision_cap_per_hour ?? 100,
        retention_days: b.retention_days ?? null,
        quarantine_retention_days: b.quarantine_retention_days ?? null,
      })
      return json(201, { data: w })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces',
    summary: 'List workspaces',
    cli: { name: 'workspaces:list', summary: 'List workspaces.' },
    handler: async () => json(200, { data: await tenants.listWorkspaces() }),
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws',
    summary: 'Get a workspace',
    cli: { name: 'workspaces:show', summary: 'Show one workspace.' },
    handler: async (req) => json(200, { data: await workspace(idParam(req, 'ws')) }),
  })

  adminRoute(router, s, {
    method: 'PATCH',
    path: '/workspaces/:ws',
    summary: 'Change a workspace',
    body: WorkspacePatch,
    cli: {
      name: 'workspaces:update',
      summary: 'Change name, plan meter limit, provisioning cap or retention.',
    },
    handler: async (req, { checkBody }) => {
      const w = await workspace(idParam(req, 'ws'))
      const b = checkBody()
      const next = { ...w, ...b }
      await tenants.saveWorkspace(next)
      await s.coord.publish('invalidate', 'workspace').catch(() => {})
      return json(200, { data: next })
    },
  })

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/users',
    summary: 'Add a member',
    body: UserCreate,
    success: 201,
    cli: { name: 'users:create', summary: 'Add a member (e.g. --permissions groups.manage).' },
    handler: async (req, { checkBody }) => {
      const w = await workspace(idParam(req, 'ws'))
      const b = checkBody()
      // One user per e-mail address in a workspace (compared case-insensitively). The lease
      // makes check-then-create atomic across instances; a concurrent POST of the same
      // address is the duplicate.
      const email = b.email.toLowerCase()
      const lease = `user-email:${w.id}:${email}`
      const owner = crypto.randomUUID()
      const duplicate = () =>
        apiError('Conflict', `A user with the e-mail ${b.email} already exists in this workspace.`)
      if (!(await s.coord.lease(lease, owner, 30_000))) throw duplicate()
      try {
        if ((await tenants.listUsers(w.id)).some((u) => u.email.toLowerCase() === email))
          throw duplicate()
        const user = await tenants.createUser({
          workspace_id: w.id,
          email: b.email,
          owner: b.owner ?? false,
          permissions: [...new Set(b.permissions ?? [])],
        })
        return json(201, { data: publicUser(user) })
      } finally {
        await s.coord.release(lease, owner).catch(() => {})
      }
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/users',
    summary: 'List members',
    cli: { name: 'users:list', summary: "List a workspace's members." },
    handler: async (req) => {
      const w = await workspace(idParam(req, 'ws'))
      return json(200, { data: (await tenants.listUsers(w.id)).map(publicUser) })
    },
  })

  adminRoute(router, s, {
    method: 'PATCH',
    path: '/users/:user',
    summary: 'Change owner flag or permissions',
    body: UserPatch,
    cli: {
      name: 'users:update',
      summary: 'Change owner flag or permissions (takes effect on tokens at once).',
    },
    handler: async (req, { checkBody }) => {
      const id = idParam(req, 'user')
      const u = (await tenants.getUser(id)) ?? notFound('user', id)
      const b = checkBody()
      const next = {
        ...u,
        ...b,
        permissions: b.permissions ? [...new Set(b.permissions)] : u.permissions,
      }
      await tenants.saveUser(next)
      // Taking `groups.manage` away must bite on the user's tokens at once, on every instance.
      s.auth.invalidate()
      await s.coord.publish('invalidate', 'auth').catch(() => {})
      return json(200, { data: publicUser(next) })
    },
  })

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/tokens',
    summary: 'Issue an API token (the secret is shown only here)',
    body: TokenCreate,
    success: 201,
    cli: {
      name: 'tokens:create',
      summary: 'Create an API token (the secret is shown only here).',
      fields: [
        'user=user_id',
        'scopes',
        'name:string',
        'expires_at',
        'rate-limit=rate_limit_per_minute',
      ],
    },
    handler: async (req, { checkBody }) => {
      const w = await workspace(idParam(req, 'ws'))
      const b = checkBody()
      const user = await tenants.getUser(b.user_id)
      if (!user || user.workspace_id !== w.id)
        throw validationError({ user_id: ['The user_id must name a user of this workspace.'] })
      if (b.expires_at && Number.isNaN(Date.parse(b.expires_at)))
        throw validationError({
          expires_at: ['The expires_at field must be an ISO 8601 date-time.'],
        })
      const secret = newSecret('mf')
      const t = await tenants.createToken({
        workspace_id: w.id,
        user_id: user.id,
        name: b.name ?? null,
        token_hash: hashToken(secret),
        scopes: [...new Set(b.scopes)],
        expires_at: b.expires_at ? new Date(b.expires_at).toISOString() : null,
        rate_limit_per_minute: b.rate_limit_per_minute ?? 60,
      })
      return json(201, {
        data: {
          id: t.id,
          name: t.name,
          token: secret,
          scopes: t.scopes,
          expires_at: t.expires_at,
          rate_limit_per_minute: t.rate_limit_per_minute,
        },
      })
    },
  })

  adminRoute(router, s, {
    method: 'DELETE',
    path: '/tokens/:id',
    summary: 'Revoke a token',
    cli: { name: 'tokens:revoke', summary: 'Revoke an API token.', param: 'token' },
    handler: async (req) => {
      const id = idParam(req, 'id')
      const t = (await tenants.getToken(id)) ?? notFound('token', id)
      if (!t.revoked_at)
        await tenants.saveToken({ ...t, revoked_at: new Date(s.clock.now()).toISOString() })
      s.auth.invalidate()
      await s.coord.publish('invalidate', 'auth').catch(() => {})
      return json(200, { data: { id, revoked: true } })
    },
  })
}

function publicUser(u: { id: number; email: string; owner: boolean; permissions: string[] }) {
  return { id: u.id, email: u.email, owner: u.owner, permissions: u.permissions }
}

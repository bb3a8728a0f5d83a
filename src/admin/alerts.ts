// Operator API: alert rules and alerts (operator-api.md, "Alerts"; docs/alerts.md).
import { Type } from '@sinclair/typebox'
import { validationError } from '../errors.js'
import type { Router } from '../http/router.js'
import { json } from '../http/types.js'
import { check } from '../validate.js'
import { AlertRepo, alertView, type AlertRuleType } from '../scheduler/alerts.js'
import type { AdminDeps } from './deps.js'
import { CANONICAL_STATUSES } from './profiles.js'
import { FLAG_ORDER } from '../domain/quality.js'
import { adminRoute, idParam, notFound } from './guard.js'

const QUALITY_FLAGS = FLAG_ORDER

const literals = (xs: readonly string[]) => Type.Union(xs.map((x) => Type.Literal(x)))
export const RuleBase = Type.Object(
  { type: literals(['no_data', 'status', 'quality']), params: Type.Optional(Type.Unknown()) },
  { additionalProperties: false },
)
export const NoDataParams = Type.Object(
  { after_minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 525_600 })) },
  { additionalProperties: false },
)
export const StatusParams = Type.Object(
  { statuses: Type.Array(literals(CANONICAL_STATUSES), { minItems: 1, uniqueItems: true }) },
  { additionalProperties: false },
)
export const QualityParams = Type.Object(
  { flags: Type.Array(literals(QUALITY_FLAGS), { minItems: 1, uniqueItems: true }) },
  { additionalProperties: false },
)
export const ResolveBody = Type.Object(
  { by: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
  { additionalProperties: false },
)

export function registerAlertAdmin(
  router: Router,
  s: Pick<AdminDeps, 'adminToken' | 'clock' | 'meters' | 'outbox' | 'store' | 'tenants'>,
): void {
  const repo = new AlertRepo(s)
  const workspace = async (ws: number) =>
    (await s.tenants.getWorkspace(ws)) ?? notFound('workspace', ws)

  adminRoute(router, s, {
    method: 'POST',
    path: '/workspaces/:ws/alert-rules',
    summary: 'Create an alert rule',
    body: RuleBase,
    success: 201,
    cli: {
      name: 'alert-rules:create',
      summary: 'Create an alert rule (no_data, status, quality).',
    },
    handler: async (req, { checkBody }) => {
      const ws = idParam(req, 'ws')
      await workspace(ws)
      const b = checkBody()
      const raw = b.params ?? {}
      const schema =
        b.type === 'no_data' ? NoDataParams : b.type === 'status' ? StatusParams : QualityParams
      const params = check(schema, raw, 'params') as Record<string, unknown>
      const rule = await repo.createRule(ws, b.type as AlertRuleType, params)
      return json(201, { data: { id: rule.id, type: rule.type, params: rule.params } })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/alert-rules',
    summary: 'List alert rules',
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      await workspace(ws)
      return json(200, {
        data: (await repo.rules(ws)).map((r) => ({ id: r.id, type: r.type, params: r.params })),
      })
    },
  })

  adminRoute(router, s, {
    method: 'GET',
    path: '/workspaces/:ws/alerts',
    summary: 'List alerts',
    query: [
      { name: 'state', schema: Type.Union([Type.Literal('open'), Type.Literal('resolved')]) },
    ],
    cli: { name: 'alerts:list', summary: 'List alerts (--state open|resolved).' },
    handler: async (req) => {
      const ws = idParam(req, 'ws')
      await workspace(ws)
      const state = req.query.get('state')
      if (state !== null && state !== 'open' && state !== 'resolved')
        throw validationError({ state: ['The state parameter must be open or resolved.'] })
      const rules = new Map((await repo.rules(ws)).map((r) => [r.id, r]))
      const alerts = await repo.list(ws, state ?? undefined)
      return json(200, { data: alerts.map((a) => alertView(a, rules.get(a.rule_id))) })
    },
  })

  adminRoute(router, s, {
    method: 'POST',
    path: '/alerts/:id/resolve',
    summary: 'Resolve an alert',
    body: ResolveBody,
    cli: { name: 'alerts:resolve', summary: 'Resolve an alert.', param: 'alert', fields: [] },
    handler: async (req, { checkBody }) => {
      const id = idParam(req, 'id')
      const a = (await repo.get(id)) ?? notFound('alert', id)
      const b = req.body.length ? checkBody() : {}
      const rule = (await repo.rules(a.workspace_id)).find((r) => r.id === a.rule_id) ?? null
      if (a.state === 'resolved') return json(200, { data: alertView(a, rule) })
      const meter = await s.meters.byId(a.workspace_id, a.meter_id)
      // Resolved by a member: no new alert for this rule and meter until the condition has
      // cleared once (docs/alerts.md); the scheduler re-arms it when it sees it clear.
      await repo.setWaiting(a, true)
      const next = await repo.resolve(a, b.by ?? 'member', s.clock.now(), rule, meter)
      return json(200, { data: alertView(next, rule) })
    },
  })
}

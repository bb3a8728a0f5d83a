// What the OpenAPI document says about each route. Request bodies are the very TypeBox
// schemas the handlers pass to check(); the few handlers that validate by hand (event
// subscriptions, query strings, NDJSON imports) are described here and marked so.
import { Type, type TSchema } from '@sinclair/typebox'
import * as alerts from '../admin/alerts.js'
import * as decode from '../admin/decode.js'
import * as jobs from '../admin/jobs.js'
import * as mqtt from '../admin/mqtt.js'
import * as ameters from '../admin/meters.js'
import * as profiles from '../admin/profiles.js'
import * as tenants from '../admin/tenants.js'
import * as transfers from '../admin/transfers.js'
import * as webhooks from '../admin/webhooks.js'
import * as groups from '../api/groups.js'
import * as meters from '../api/meters.js'
import { GenericItem, PayloadItem } from '../ingest/schema.js'

export type Auth = 'token' | 'admin' | 'webhook' | 'none'

export interface QueryParam {
  name: string
  schema: TSchema
  description?: string
}

export interface RouteDoc {
  summary: string
  auth: Auth
  scope?: string
  body?: TSchema
  /** The body is described here, not taken from a schema the handler checks. */
  bodyByHand?: boolean
  bodyMediaType?: string
  query?: QueryParam[]
  success?: number
  response?: TSchema
}

const Int = Type.Integer()
const Str = Type.String()
const DateTime = Type.String({ description: 'ISO 8601' })

export const ItemResult = Type.Object({
  meter: Str,
  kind: Type.Union([Type.Literal('consumption'), Type.Literal('saldo')]),
  recorded_at: Str,
  status: Type.Union(
    [
      'created',
      'duplicate',
      'rejected_provision_limit',
      'rejected_plan_limit',
      'rejected_unconfigured',
      'rejected_undecodable',
      'rejected_meter_retired',
      'rejected_unmappable',
    ].map((s) => Type.Literal(s)),
  ),
  reason: Type.Optional(Str),
})
export const ReportResult = Type.Object({
  accepted: Int,
  duplicates: Int,
  rejected: Int,
  results: Type.Array(ItemResult),
})
export const ReportRequest = Type.Object({
  readings: Type.Array(Type.Union([GenericItem, PayloadItem]), {
    description:
      'The whole batch is validated before anything is stored (422 naming readings.<i>.<field>).',
  }),
})
const Data = Type.Object({ data: Type.Unknown() })

const range: QueryParam[] = [
  { name: 'from', schema: DateTime },
  { name: 'to', schema: DateTime },
  { name: 'page', schema: Type.Integer({ minimum: 1, default: 1 }) },
  { name: 'per_page', schema: Type.Integer({ minimum: 1, default: 100 }) },
]

const SubscriptionCreate = Type.Object(
  {
    url: Str,
    events: Type.Array(Str, { description: 'catalog names or ["*"]' }),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
const SubscriptionPatch = Type.Partial(SubscriptionCreate)

const report = (summary: string): RouteDoc => ({
  summary,
  auth: 'token',
  scope: 'data:report',
  body: ReportRequest,
  success: 201,
  response: ReportResult,
})

export const ROUTES: Record<string, RouteDoc> = {
  'GET /healthz': { summary: 'Liveness without authentication', auth: 'none' },
  'GET /metrics': {
    summary:
      'Prometheus metrics (text exposition format); bearer METRICS_TOKEN when set, else the admin token',
    auth: 'admin',
  },
  'GET /api/v1/openapi.json': { summary: 'This document', auth: 'none' },
  'GET /api/v1/ping': {
    summary: 'Authenticated liveness probe with scheduler heartbeat',
    auth: 'token',
  },
  'POST /api/v1/reportData': report(
    'Report a batch of readings (201 when one was stored, 200 otherwise)',
  ),
  'POST /api/v1/webhooks/{endpoint}': {
    summary: 'Webhook ingest: foreign JSON mapped onto readings by the endpoint mapping',
    auth: 'webhook',
    body: Type.Unknown(),
    bodyByHand: true,
    response: ReportResult,
  },
  'GET /api/v1/meters': {
    summary: 'List meters',
    auth: 'token',
    scope: 'data:read',
    response: Data,
  },
  'POST /api/v1/meters': {
    summary: 'Create a meter',
    auth: 'token',
    scope: 'masterdata:write',
    body: meters.CreateBody,
    success: 201,
  },
  'PATCH /api/v1/meters/{meter}': {
    summary: 'Update a meter',
    auth: 'token',
    scope: 'masterdata:write',
    body: meters.PatchBody,
  },
  'DELETE /api/v1/meters/{meter}': {
    summary: 'Delete a meter',
    auth: 'token',
    scope: 'masterdata:write',
    body: meters.DeleteBody,
  },
  'GET /api/v1/meterGroups': {
    summary: 'List meter groups (flat, by path)',
    auth: 'token',
    scope: 'data:read',
    query: [{ name: 'group_id', schema: Int }],
  },
  'POST /api/v1/meterGroups': {
    summary: 'Create a group',
    auth: 'token',
    scope: 'masterdata:write',
    body: groups.CreateBody,
    success: 201,
  },
  'PATCH /api/v1/meterGroups/{group}': {
    summary: 'Rename or move a group',
    auth: 'token',
    scope: 'masterdata:write',
    body: groups.PatchBody,
  },
  'DELETE /api/v1/meterGroups/{group}': {
    summary: 'Delete an empty group',
    auth: 'token',
    scope: 'masterdata:write',
  },
  'GET /api/v1/readings': {
    summary: 'Readings: raw, hourly or daily aggregates, or derived consumption',
    auth: 'token',
    scope: 'data:read',
    query: [
      { name: 'meter_id', schema: Int },
      { name: 'group_id', schema: Int },
      { name: 'kind', schema: Type.Union([Type.Literal('consumption'), Type.Literal('saldo')]) },
      {
        name: 'aggregate',
        schema: Type.Union([Type.Literal('raw'), Type.Literal('hourly'), Type.Literal('daily')]),
      },
      { name: 'derive', schema: Type.Literal('consumption') },
      { name: 'interpolate', schema: Type.Literal('linear') },
      { name: 'tz', schema: Type.String({ description: 'IANA time zone' }) },
      {
        name: 'format',
        schema: Type.Union(['json', 'csv', 'ndjson', 'parquet'].map((f) => Type.Literal(f))),
        description:
          'Export format (also by Accept: text/csv, application/x-ndjson, application/vnd.apache.parquet): the whole range streamed, no paging (docs/query.md "Exports")',
      },
      ...range,
    ],
  },
  'GET /api/v1/statusReports': {
    summary: 'Device status history, newest first',
    auth: 'token',
    scope: 'data:read',
    query: [{ name: 'meter_id', schema: Int }, ...range],
  },

  'POST /admin/v1/workspaces': {
    summary: 'Create a workspace',
    auth: 'admin',
    body: tenants.WorkspaceCreate,
    success: 201,
  },
  'GET /admin/v1/workspaces': { summary: 'List workspaces', auth: 'admin' },
  'GET /admin/v1/workspaces/{ws}': { summary: 'Get a workspace', auth: 'admin' },
  'PATCH /admin/v1/workspaces/{ws}': {
    summary: 'Change a workspace',
    auth: 'admin',
    body: tenants.WorkspacePatch,
  },
  'POST /admin/v1/workspaces/{ws}/users': {
    summary: 'Add a member',
    auth: 'admin',
    body: tenants.UserCreate,
    success: 201,
  },
  'GET /admin/v1/workspaces/{ws}/users': { summary: 'List members', auth: 'admin' },
  'PATCH /admin/v1/users/{user}': {
    summary: 'Change owner flag or permissions',
    auth: 'admin',
    body: tenants.UserPatch,
  },
  'POST /admin/v1/workspaces/{ws}/tokens': {
    summary: 'Issue an API token (the secret is shown only here)',
    auth: 'admin',
    body: tenants.TokenCreate,
    success: 201,
  },
  'DELETE /admin/v1/tokens/{id}': { summary: 'Revoke a token', auth: 'admin' },
  'POST /admin/v1/workspaces/{ws}/webhook-endpoints': {
    summary: 'Create a webhook ingest endpoint (token shown only here)',
    auth: 'admin',
    body: webhooks.EndpointCreate,
    success: 201,
  },
  'GET /admin/v1/workspaces/{ws}/webhook-endpoints': {
    summary: 'List webhook ingest endpoints',
    auth: 'admin',
  },
  'GET /admin/v1/webhook-endpoints/{id}': {
    summary: 'Get a webhook ingest endpoint',
    auth: 'admin',
  },
  'PATCH /admin/v1/webhook-endpoints/{id}': {
    summary: 'Enable, disable or remap',
    auth: 'admin',
    body: webhooks.EndpointPatch,
  },
  'POST /admin/v1/webhook-endpoints/{id}/rotate-token': {
    summary: 'Issue a new endpoint token',
    auth: 'admin',
  },
  'POST /admin/v1/workspaces/{ws}/mqtt-subscriptions': {
    summary: 'Subscribe to MQTT topics of a broker (mapping or preset; the password is write-only)',
    auth: 'admin',
    body: mqtt.MqttSubscriptionCreate,
    success: 201,
  },
  'GET /admin/v1/workspaces/{ws}/mqtt-subscriptions': {
    summary: 'List MQTT subscriptions with their status',
    auth: 'admin',
  },
  'GET /admin/v1/mqtt-subscriptions/{id}': {
    summary: 'Get an MQTT subscription with its status (connected, last message, errors, counts)',
    auth: 'admin',
  },
  'PATCH /admin/v1/mqtt-subscriptions/{id}': {
    summary: 'Change an MQTT subscription (its owner reconnects)',
    auth: 'admin',
    body: mqtt.MqttSubscriptionPatch,
  },
  'DELETE /admin/v1/mqtt-subscriptions/{id}': {
    summary: 'Delete an MQTT subscription (the persistent session stays on the broker)',
    auth: 'admin',
  },
  'GET /admin/v1/workspaces/{ws}/sql-access': {
    summary:
      'SQL creating a read-only ClickHouse user limited to the workspace by a row policy (not executed; docs/data-teams.md)',
    auth: 'admin',
    query: [{ name: 'user', schema: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$' }) }],
  },
  'GET /admin/v1/mapping-presets': {
    summary: 'Mapping presets usable by name ({preset}) with their mapping and a sample message',
    auth: 'admin',
  },
  'POST /admin/v1/workspaces/{ws}/event-subscriptions': {
    summary: 'Subscribe a URL to events (signing secret shown here)',
    auth: 'admin',
    body: SubscriptionCreate,
    bodyByHand: true,
    success: 201,
  },
  'GET /admin/v1/workspaces/{ws}/event-subscriptions': {
    summary: 'List event subscriptions',
    auth: 'admin',
  },
  'GET /admin/v1/event-subscriptions/{id}': { summary: 'Get an event subscription', auth: 'admin' },
  'PATCH /admin/v1/event-subscriptions/{id}': {
    summary: 'Change an event subscription',
    auth: 'admin',
    body: SubscriptionPatch,
    bodyByHand: true,
  },
  'POST /admin/v1/event-subscriptions/{id}/rotate-secret': {
    summary: 'New signing secret; the old one stops at once',
    auth: 'admin',
  },
  'GET /admin/v1/event-subscriptions/{id}/deliveries': {
    summary: 'Deliveries, newest first',
    auth: 'admin',
  },
  'POST /admin/v1/deliveries/{id}/retry': {
    summary: 'Retry a delivery (same id)',
    auth: 'admin',
    success: 202,
  },
  'GET /admin/v1/workspaces/{ws}/outbox': { summary: 'Mails the workspace sent', auth: 'admin' },
  'PUT /admin/v1/meters/{meter}/lifecycle': {
    summary: 'Set lifecycle state',
    auth: 'admin',
    body: ameters.LifecycleBody,
  },
  'PUT /admin/v1/meters/{meter}/profile': {
    summary: 'Assign and confirm a profile',
    auth: 'admin',
    body: ameters.ProfileBody,
  },
  'PUT /admin/v1/meters/{meter}/wmbus-key': {
    summary: 'Store or clear the wM-Bus key; storing one replays the quarantined telegrams',
    auth: 'admin',
    body: ameters.WmbusKeyBody,
  },
  'POST /admin/v1/decode': {
    summary: 'Analyze a wM-Bus telegram: layers, security, records, register or the failing layer',
    auth: 'admin',
    body: decode.DecodeBody,
  },
  'POST /admin/v1/meters/{meter}/exchanges': {
    summary: 'Record a meter exchange',
    auth: 'admin',
    body: ameters.ExchangeBody,
    success: 201,
  },
  'GET /admin/v1/meters/{meter}/exchanges': { summary: 'List meter exchanges', auth: 'admin' },
  'GET /admin/v1/meters/{meter}/quarantine': {
    summary: 'wM-Bus telegrams kept for want of a key, replayed by the next key PUT',
    auth: 'admin',
  },
  'GET /admin/v1/workspaces/{ws}/profiles': {
    summary: 'Built-in and workspace profiles',
    auth: 'admin',
  },
  'POST /admin/v1/workspaces/{ws}/profiles': {
    summary: 'Create a profile or a new version of one',
    auth: 'admin',
    body: profiles.ProfileCreate,
    success: 201,
  },
  'POST /admin/v1/workspaces/{ws}/alert-rules': {
    summary: 'Create an alert rule',
    auth: 'admin',
    body: alerts.RuleBase,
    success: 201,
  },
  'GET /admin/v1/workspaces/{ws}/alert-rules': { summary: 'List alert rules', auth: 'admin' },
  'GET /admin/v1/workspaces/{ws}/alerts': {
    summary: 'List alerts',
    auth: 'admin',
    query: [
      { name: 'state', schema: Type.Union([Type.Literal('open'), Type.Literal('resolved')]) },
    ],
  },
  'POST /admin/v1/alerts/{id}/resolve': {
    summary: 'Resolve an alert',
    auth: 'admin',
    body: alerts.ResolveBody,
  },
  'POST /admin/v1/workspaces/{ws}/imports': {
    summary: 'Import NDJSON, one reportData item a line',
    auth: 'admin',
    body: Type.String(),
    bodyByHand: true,
    bodyMediaType: 'application/x-ndjson',
    success: 202,
  },
  'GET /admin/v1/imports/{id}': { summary: 'Import status', auth: 'admin' },
  'POST /admin/v1/workspaces/{ws}/transfers': {
    summary: 'Schedule a daily transfer',
    auth: 'admin',
    body: transfers.TransferCreate,
    success: 201,
  },
  'GET /admin/v1/workspaces/{ws}/transfers': { summary: 'List transfers', auth: 'admin' },
  'DELETE /admin/v1/transfers/{id}': { summary: 'Delete a transfer', auth: 'admin' },
  'POST /admin/v1/scheduler/run': { summary: 'Run one scheduler pass now', auth: 'admin' },
  'POST /admin/v1/jobs/backfill-reading-quality': {
    summary: 'Recompute canonical values and quality flags',
    auth: 'admin',
    body: jobs.BackfillBody,
  },
}

// Event subscriptions, deliveries and owner mails in ClickHouse. Rows are versioned
// (ReplacingMergeTree): every change inserts the whole row again with a higher version and
// reads use FINAL, so a delivery's state is one row however often it was attempted.
import { GroupCommit } from './group-commit.js'
import { chTime, jsonOrNull, parseChTime, type Sql } from './sql.js'
import type { Store } from './store.js'

export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

export interface Subscription {
  id: number
  workspace_id: number
  url: string
  events: string[]
  enabled: boolean
  signing_secret: string
  consecutive_failures: number
  created_at: number
}

export interface Delivery {
  id: string
  workspace_id: number
  subscription_id: number
  event: string
  /** The exact body bytes that are signed and sent (UTF-8 JSON). */
  body: string
  status: DeliveryStatus
  attempts: number
  last_status_code: number | null
  last_error: string | null
  /** Epoch ms; null once delivered or failed. */
  next_attempt_at: number | null
  /** All five attempts of the current series failed. */
  exhausted: boolean
  created_at: number
  version: number
}

export interface Mail {
  workspace_id: number
  id: number
  to: string
  subject: string
  body: string
  created_at: number
}

const msOrNull = (v: unknown) => (v === null || v === undefined ? null : parseChTime(String(v)))
const chOrNull = (ms: number | null) => (ms === null ? null : chTime(ms))

function subscriptionFromRow(r: Record<string, any>): Subscription {
  return {
    id: Number(r.id),
    workspace_id: Number(r.workspace_id),
    url: r.url,
    events: r.events,
    enabled: Number(r.enabled) === 1,
    signing_secret: r.signing_secret,
    consecutive_failures: Number(r.consecutive_failures),
    created_at: parseChTime(r.created_at),
  }
}

function deliveryFromRow(r: Record<string, any>): Delivery {
  return {
    id: r.id,
    workspace_id: Number(r.workspace_id),
    subscription_id: Number(r.subscription_id),
    event: r.event,
    body: r.body,
    status: r.status,
    attempts: Number(r.attempts),
    last_status_code: r.last_status_code === null ? null : Number(r.last_status_code),
    last_error: r.last_error,
    next_attempt_at: msOrNull(r.next_attempt_at),
    exhausted: Number(r.exhausted) === 1,
    created_at: parseChTime(r.created_at),
    version: Number(r.version),
  }
}

function mailFromRow(r: Record<string, any>): Mail {
  return {
    workspace_id: Number(r.workspace_id),
    id: Number(r.id),
    to: r.to,
    subject: r.subject,
    body: r.body,
    created_at: parseChTime(r.created_at),
  }
}

const RESULT_LINGER_MS = 100

/**
 * A delivery row as a JSONEachRow line, written by hand: every attempt stores its row again,
 * and spreading the delivery into an object for JSON.stringify was 4.5 % of the main thread
 * while a `meter.created` backlog was sent (the largest self time of our own code there).
 */
function deliveryLine(d: Delivery): string {
  return (
    `{"workspace_id":${d.workspace_id},"id":${JSON.stringify(d.id)},"subscription_id":${d.subscription_id},` +
    `"event":${JSON.stringify(d.event)},"body":${JSON.stringify(d.body)},"status":${JSON.stringify(d.status)},` +
    `"attempts":${d.attempts},"last_status_code":${d.last_status_code ?? 'null'},` +
    `"last_error":${jsonOrNull(d.last_error)},"next_attempt_at":${jsonOrNull(chOrNull(d.next_attempt_at))},` +
    `"exhausted":${d.exhausted ? 1 : 0},"created_at":"${chTime(d.created_at)}","version":${d.version}}\n`
  )
}

export class EventRepo {
  private readonly sql: Sql
  /**
   * Delivery rows (new events, attempt results) written together: every attempt stores its
   * result, and one INSERT each held the delivery engine to ~35 attempts a second. Attempt
   * results, which nobody waits for, may gather for RESULT_LINGER_MS, so a backlog sent at
   * thousands a second writes a few large parts; they ride along with the INSERT of new
   * events when one starts sooner (a provisioning run wrote two streams of INSERTs).
   */
  private readonly deliveries: GroupCommit
  constructor(private readonly store: Store) {
    this.sql = store.sql
    // Read under FINAL (the one read without it, in meters.ts, only asks which meters have a
    // row): a page's pending rows and results need no collapse on write.
    this.deliveries = new GroupCommit(this.sql, 'event_deliveries', {
      insert: { collapseInMerges: true },
    })
  }

  nextSubscriptionId(): Promise<number> {
    return this.store.nextId('event_subscriptions')
  }

  async saveSubscription(sub: Subscription): Promise<void> {
    await this.sql.insert(
      'event_subscriptions',
      JSON.stringify({
        ...sub,
        enabled: sub.enabled ? 1 : 0,
        created_at: chTime(sub.created_at),
        version: await this.store.sharedVersion(),
      }),
    )
  }

  async getSubscription(id: number): Promise<Subscription | null> {
    const [r] = await this.sql.query(
      'SELECT * FROM event_subscriptions FINAL WHERE id = {id:UInt64}',
      { id },
    )
    return r ? subscriptionFromRow(r) : null
  }

  async listSubscriptions(workspaceId: number): Promise<Subscription[]> {
    return (
      await this.sql.query(
        'SELECT * FROM event_subscriptions FINAL WHERE workspace_id = {ws:UInt64} ORDER BY id',
        { ws: workspaceId },
      )
    ).map(subscriptionFromRow)
  }

  /** Writes new deliveries, or new states of existing ones (`result`: an attempt's, which may wait). */
  async saveDeliveries(ds: readonly Delivery[], kind: 'new' | 'result' = 'new'): Promise<void> {
    if (ds.length === 0) return
    // One version for all: each row is new, and a later change of any of them takes a
    // sharedVersion above this one (consecutive versions could overtake the clock).
    const version = await this.store.sharedVersion()
    let rows = ''
    for (const d of ds) {
      d.version = version
      rows += deliveryLine(d)
    }
    await this.deliveries.write(rows, ds.length, kind === 'result' ? RESULT_LINGER_MS : 0)
  }

  /** With the workspace, a look-up by the sorting key instead of a scan of every delivery. */
  async getDelivery(id: string, ws?: number): Promise<Delivery | null> {
    const [r] = await this.sql.query(
      ws === undefined
        ? 'SELECT * FROM event_deliveries FINAL WHERE id = {id:String}'
        : 'SELECT * FROM event_deliveries FINAL WHERE workspace_id = {ws:UInt64} AND id = {id:String}',
      ws === undefined ? { id } : { id, ws },
    )
    return r ? deliveryFromRow(r) : null
  }

  /**
   * Pending deliveries of enabled subscriptions whose next attempt is due at `now`, oldest
   * due first, at most `perTarget` per subscription so a target with a backlog cannot crowd
   * out the others.
   */
  async dueDeliveries(now: number, perTarget: number, limit = 5000): Promise<Delivery[]> {
    return (
      await this.sql.query(
        `SELECT * FROM event_deliveries FINAL
         WHERE status = 'pending' AND next_attempt_at <= {now:DateTime64(3, 'UTC')}
           AND subscription_id IN (SELECT id FROM event_subscriptions FINAL WHERE enabled = 1)
         ORDER BY next_attempt_at, created_at, id
         LIMIT {per:UInt32} BY subscription_id
         LIMIT {limit:UInt32}`,
        { now: chTime(now), per: perTarget, limit },
      )
    ).map(deliveryFromRow)
  }

  /** The earliest next attempt after `after` of a pending delivery of an enabled subscription. */
  async nextDue(after: number): Promise<number | null> {
    const [r] = await this.sql.query<{ n: string; t: string }>(
      `SELECT count() AS n, min(next_attempt_at) AS t FROM event_deliveries FINAL
       WHERE status = 'pending' AND next_attempt_at > {after:DateTime64(3, 'UTC')}
         AND subscription_id IN (SELECT id FROM event_subscriptions FINAL WHERE enabled = 1)`,
      { after: chTime(after) },
    )
    return r && Number(r.n) > 0 ? parseChTime(r.t) : null
  }

  /** Newest first (ids are UUIDv7, so they break ties of the same millisecond in order). */
  async listDeliveries(subscriptionId: number, limit: number): Promise<Delivery[]> {
    return (
      await this.sql.query(
        `SELECT * FROM event_deliveries FINAL WHERE subscription_id = {sub:UInt64}
         ORDER BY created_at DESC, id DESC LIMIT {limit:UInt32}`,
        { sub: subscriptionId, limit },
      )
    ).map(deliveryFromRow)
  }

  async addMails(mails: Omit<Mail, 'id'>[]): Promise<Mail[]> {
    const out: Mail[] = []
    for (const m of mails) out.push({ ...m, id: await this.store.nextId('mails') })
    if (out.length)
      await this.sql.insert(
        'mails',
        out.map((m) => JSON.stringify({ ...m, created_at: chTime(m.created_at) })).join('\n'),
      )
    return out
  }

  async listMails(workspaceId: number): Promise<Mail[]> {
    return (
      await this.sql.query(
        'SELECT * FROM mails FINAL WHERE workspace_id = {ws:UInt64} ORDER BY created_at DESC, id DESC',
        { ws: workspaceId },
      )
    ).map(mailFromRow)
  }
}

/** Deliveries by status across the store (the outbox backlog is `pending`), for /metrics. */
export async function deliveryCountsByStatus(sql: Sql): Promise<Map<string, number>> {
  const rows = await sql.query<{ status: string; n: string }>(
    'SELECT status, count() AS n FROM event_deliveries FINAL GROUP BY status',
  )
  return new Map(rows.map((r) => [r.status, Number(r.n)]))
}

// The delivery engine: finds due pending deliveries and sends them, signed with the
// subscription's current secret. Targets are served concurrently (a limit of attempts in
// flight per subscription that a healthy target raises and a failing one lowers, and a
// global bound), so a slow or dead target only ever delays itself. Due-ness comes from the
// injected clock; a timer polls, `runDue` lets tests drive it. With several instances, a
// claim per (delivery, attempt, row version) makes exactly one of them send each attempt.
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { Coord } from '../coord/coord.js'
import type { Part } from '../lifecycle.js'
import type { TenantRepo } from '../store/tenants.js'
import type { Mailer } from './mailer.js'
import type { Delivery, EventRepo, Subscription } from '../store/events.js'
import { Gate } from './gate.js'
import { closeConnections, post } from './send.js'
import { signatureHeader } from './signing.js'
import { SwitchOff } from './switch-off.js'

export interface EngineOptions {
  /** Delays before retries 1-4 (EVENT_RETRY_DELAYS_MS). */
  retryDelaysMs: readonly number[]
  timeoutMs: number
  /** Consecutive exhausted deliveries that switch a target off. */
  disableAfter: number
  blockPrivate: boolean
  pollMs?: number
  /** Attempts in flight across all targets. */
  concurrency?: number
  /**
   * Most attempts in flight to one target. Each target starts at one and earns more by
   * answering (one more per 2xx, halved on a failure), so a dead or slow target holds one
   * slot while a healthy one is sent a backlog in parallel.
   */
  perTargetConcurrency?: number
  /** Due deliveries fetched per target per poll. */
  perTarget?: number
  /** Real-time period of a poll even when nothing known here is due. */
  rescanMs?: number
}

/**
 * How long a row in hand (of a due page, or just stored by this instance's outbox) stands for
 * the stored row (see attempt). Below the claim TTL (timeout + 60 s): whoever moved the row on
 * since it was read claimed the same attempt after that read, and that claim still stands.
 */
const FRESH_MS = 30_000
/**
 * Attempts waiting or running here at most. Deliveries the outbox hands over beyond it stay
 * pending in the store for the scan, so a burst of events holds bounded memory.
 */
const MAX_HELD = 20_000
/** Results remembered (see `stored`). */
const MAX_STORED = 20_000

/** An attempt made: the delivery's next state, and the subscription it was sent with. */
interface Attempted {
  next: Delivery
  sub: Subscription
}

export class DeliveryEngine implements Part {
  readonly name = 'events'
  private readonly pollMs: number
  private readonly perTarget: number
  private stopTimer: (() => void) | null = null
  private stopped = true
  private polling: Promise<void> | null = null
  private pollAgain = false
  /** Delivery id → its queued or running attempt (resolves to 1 when one was made). */
  private readonly inflight = new Map<string, Promise<number>>()
  private readonly perTargetConcurrency: number
  /** Subscription id → the gate of its attempts (its limit adapts, see answered()). */
  private readonly targets = new Map<number, Gate>()
  /** Attempts in flight across all targets. */
  private readonly slots: Gate
  /** Consecutive exhausted deliveries per target, and its switch-off. */
  private readonly switchOff: SwitchOff
  /**
   * Delivery id → row version of the last result stored here. A scan that started before a
   * result was stored returns the row as it was; known stale, it is dropped here instead of
   * claimed, refused and read again.
   */
  private readonly stored = new Map<string, number>()
  /** Attempts claimed and sent by this engine (runDue counts with it). */
  private attemptsMade = 0
  // The due query reads the whole deliveries table (FINAL), so the timer runs it only when
  // something known is due (clock time), or every `rescanMs` (real time) for work another
  // instance scheduled and left behind.
  private nextDueAt = -Infinity
  /** Targets whose next page waits for this one's attempts (nextPage). */
  private readonly paging = new Set<number>()
  /** Retries scheduled while a scan runs; the scan's own answer may predate them. */
  private scheduledDuringScan = Infinity
  private lastScan = 0
  private readonly rescanMs: number

  constructor(
    private readonly repo: EventRepo,
    tenants: TenantRepo,
    private readonly mailer: Mailer,
    private readonly coord: Coord,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: EngineOptions,
    /** Told when the engine changed a subscription (counter, switch-off), to drop cached lists. */
    onSubscriptionChanged: () => Promise<void> = async () => {},
    /** A subscription as the outbox's cache has it; default: read from the store. */
    private readonly subscriptionOf: (ws: number, id: number) => Promise<Subscription | null> = (
      _ws,
      id,
    ) => repo.getSubscription(id),
  ) {
    this.pollMs = opts.pollMs ?? 1000
    const concurrency = opts.concurrency ?? 64
    this.slots = new Gate(concurrency)
    this.perTargetConcurrency = Math.min(opts.perTargetConcurrency ?? 16, concurrency)
    this.perTarget = opts.perTarget ?? 2000
    this.rescanMs = opts.rescanMs ?? 15_000
    this.switchOff = new SwitchOff(repo, tenants, mailer, log, opts, onSubscriptionChanged)
  }

  start(): void {
    if (!this.stopped) return
    this.stopped = false
    this.stopTimer = this.clock.every(this.pollMs, () => this.tick())
    this.wake()
  }

  /** Stops polling and waits for attempts in flight (each bounded by the timeout). */
  async stop(): Promise<void> {
    this.stopped = true
    this.stopTimer?.()
    this.stopTimer = null
    await this.polling?.catch(() => {})
    await Promise.allSettled([...this.inflight.values()])
    closeConnections()
    this.mailer.close()
  }

  private tick(): void {
    if (this.clock.now() >= this.nextDueAt || Date.now() - this.lastScan >= this.rescanMs)
      this.wake()
  }

  /**
   * Deliveries this instance's outbox has just stored: sent from the rows in hand. A scan per
   * emit read every delivery (FINAL) and a re-read of each row ran behind it; with a
   * `meter.created` per new meter they took more of the store than the ingest did.
   */
  accept(rows: readonly Delivery[]): void {
    if (this.stopped) return
    const readAt = Date.now()
    for (const d of rows) {
      if (this.inflight.size >= MAX_HELD) {
        // The rest is found by the next scan, page by page (or by the next page of one).
        if (this.paging.size === 0) this.nextDueAt = -Infinity
        return
      }
      if (this.wanted(d)) void this.dispatch(d, readAt)
    }
  }

  /** Look for due deliveries soon (after a manual retry) instead of at the next poll. */
  wake(): void {
    if (this.stopped) return
    if (this.polling) {
      this.pollAgain = true
      return
    }
    this.polling = (async () => {
      do {
        this.pollAgain = false
        try {
          const readAt = Date.now()
          const { rows, backlog } = await this.due()
          for (const d of rows) if (this.wanted(d)) void this.dispatch(d, readAt)
          // With a backlog the next page follows this one's attempts; meanwhile the timer
          // scans only for a retry falling due (one scheduled during this scan included).
          if (backlog) {
            this.nextDueAt = this.scheduledDuringScan
            this.nextPage(rows)
          }
        } catch (err) {
          this.nextDueAt = -Infinity
          if (!this.stopped) this.log.error({ err }, 'event delivery poll failed')
        }
      } while (this.pollAgain && !this.stopped)
    })().finally(() => {
      this.polling = null
    })
  }

  /**
   * A full page of a target means more of it is due now: its next page is fetched once this
   * page's attempts of that target (sent now, or already running from the outbox's
   * hand-over) have ended, not a poll period later (a page per period capped a backlog at
   * 50/s), and not by a poll before that: such a scan reads the whole table (FINAL) only to
   * find the attempts in flight again; a backlog of 60,000 `meter.created` took 218 of them,
   * ~60 ms each. Per target, so a slow one's page never holds back another's next.
   */
  private nextPage(page: readonly Delivery[]): void {
    const bySub = new Map<number, { rows: number; running: Promise<number>[] }>()
    for (const d of page) {
      let t = bySub.get(d.subscription_id)
      if (!t) bySub.set(d.subscription_id, (t = { rows: 0, running: [] }))
      t.rows++
      const p = this.inflight.get(d.id)
      if (p) t.running.push(p)
    }
    for (const [sub, { rows, running }] of bySub) {
      if (rows < this.perTarget) continue
      // Rows of a full page not running (stale copies came back): the timer polls again.
      if (running.length < rows) this.nextDueAt = -Infinity
      // A scan while the page runs finds it again: one wake-up per page is enough.
      if (!running.length || this.paging.has(sub)) continue
      this.paging.add(sub)
      void Promise.allSettled(running).then(() => {
        this.paging.delete(sub)
        this.wake()
      })
    }
  }

  /**
   * Sends every delivery due now and waits for those attempts, also ones a poll the clock
   * started is making. Returns the number of attempts made meanwhile: counted where they are
   * made, since a poll racing this scan may make an attempt this scan also found due.
   */
  async runDue(): Promise<number> {
    const before = this.attemptsMade
    await this.polling?.catch(() => {})
    const readAt = Date.now()
    const { rows } = await this.due()
    await Promise.all(
      rows.map((d) => this.inflight.get(d.id) ?? (this.wanted(d) ? this.dispatch(d, readAt) : 0)),
    )
    await Promise.allSettled([...this.inflight.values()])
    return this.attemptsMade - before
  }

  /** Resolves once no poll and no attempt is running (tests settle on it before moving time). */
  async idle(): Promise<void> {
    while (this.polling || this.inflight.size > 0) {
      await this.polling?.catch(() => {})
      await Promise.allSettled([...this.inflight.values()])
      // Let `finally` handlers that drop settled attempts run.
      await new Promise((r) => setImmediate(r))
    }
  }

  /** Due rows now; also learns when the next known one falls due. */
  private async due(): Promise<{ rows: Delivery[]; backlog: boolean }> {
    const now = this.clock.now()
    this.lastScan = Date.now()
    this.scheduledDuringScan = Infinity
    const rows = await this.repo.dueDeliveries(now, this.perTarget)
    // A full page per target means a backlog: the next page follows at once, and the scan
    // for the next due time (another pass over every delivery) can wait until it is over.
    const perSub = new Map<number, number>()
    for (const d of rows) perSub.set(d.subscription_id, (perSub.get(d.subscription_id) ?? 0) + 1)
    const backlog = [...perSub.values()].some((n) => n >= this.perTarget)
    if (backlog) this.nextDueAt = -Infinity
    else {
      const later = await this.repo.nextDue(now)
      this.nextDueAt = Math.min(later ?? Infinity, this.scheduledDuringScan)
    }
    return { rows, backlog }
  }

  /** Not running here, and not older than a result stored here. */
  private wanted(d: Delivery): boolean {
    if (this.inflight.has(d.id)) return false
    const v = this.stored.get(d.id)
    return v === undefined || d.version >= v
  }

  private dispatch(d: Delivery, readAt: number): Promise<number> {
    // A turn of the target first, then a global slot: attempts queued behind a slow target
    // hold no slot another target could use.
    // The gates bound requests on the wire; the result is stored after the slot is given
    // back, so a target's turn is not spent waiting for an INSERT, and the results of many
    // attempts share one.
    const run = this.target(d.subscription_id)
      .run(() => this.slots.run(() => this.attempt(d, readAt)))
      .then((made) => (made ? this.record(made) : 0))
      .catch((err: unknown) => {
        this.log.error({ err, delivery: d.id }, 'event delivery attempt failed')
        return 0
      })
    this.inflight.set(d.id, run)
    void run.finally(() => this.inflight.delete(d.id))
    return run
  }

  private target(subId: number): Gate {
    let g = this.targets.get(subId)
    if (!g) this.targets.set(subId, (g = new Gate(1)))
    return g
  }

  /** Additive increase on a 2xx, halving on a failure (see perTargetConcurrency). */
  private answered(subId: number, ok: boolean): void {
    const g = this.target(subId)
    g.setLimit(
      ok
        ? Math.min(this.perTargetConcurrency, g.current + 1)
        : Math.max(1, Math.floor(g.current / 2)),
    )
  }

  /**
   * One attempt of one delivery. The row of the due page is used while it is fresh: a stale
   * copy can only lead to a claim that is already taken (the claim names the attempt and the
   * row version it read). Then, and for an attempt that waited longer than FRESH_MS behind a
   * slow target, the row is read again (a cluster may answer a scan with a replica that has
   * not yet seen the last result).
   */
  private async attempt(page: Delivery, readAt: number): Promise<Attempted | null> {
    const read = () => this.repo.getDelivery(page.id, page.workspace_id)
    const fresh = Date.now() - readAt < FRESH_MS
    let d = fresh ? page : await read()
    let now = this.clock.now()
    let sub = await this.claim(d, now)
    if (sub === 'taken' && fresh) {
      d = await read()
      now = this.clock.now()
      sub = await this.claim(d, now)
    }
    if (sub === null || sub === 'taken' || !d) return null
    const attemptNo = d.attempts + 1
    this.attemptsMade++

    const t = Math.floor(now / 1000)
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Meterflow-Events/1',
      'x-service-signature': signatureHeader(sub.signing_secret, t, d.body),
      'x-service-event': d.event,
      'x-service-delivery': d.id,
    }
    const outcome = await post(sub.url, headers, d.body, this.opts.timeoutMs, {
      blockPrivate: this.opts.blockPrivate,
    })

    this.answered(d.subscription_id, outcome.error === null)
    const after = this.clock.now()
    const next: Delivery = {
      ...d,
      attempts: attemptNo,
      last_status_code: outcome.status,
      last_error: outcome.error,
    }
    const maxAttempts = 1 + this.opts.retryDelaysMs.length
    if (outcome.error === null) {
      Object.assign(next, { status: 'delivered', next_attempt_at: null, exhausted: false })
    } else if (attemptNo >= maxAttempts) {
      Object.assign(next, { status: 'failed', next_attempt_at: null, exhausted: true })
    } else {
      next.next_attempt_at = after + this.opts.retryDelaysMs[attemptNo - 1]!
      this.nextDueAt = Math.min(this.nextDueAt, next.next_attempt_at)
      this.scheduledDuringScan = Math.min(this.scheduledDuringScan, next.next_attempt_at)
    }
    return { next, sub }
  }

  /** Stores an attempt's result; the target's failure counter follows it. */
  private async record({ next, sub }: Attempted): Promise<number> {
    await this.repo.saveDeliveries([next], 'result')
    this.stored.delete(next.id)
    this.stored.set(next.id, next.version)
    if (this.stored.size > MAX_STORED) this.stored.delete(this.stored.keys().next().value!)
    // Nothing to reset when the target had no failures as of this attempt's read.
    if (next.status === 'delivered') {
      if (sub.consecutive_failures !== 0) await this.switchOff.settle(sub.id, 'delivered')
    } else if (next.status === 'failed') await this.switchOff.settle(sub.id, 'exhausted')
    return 1
  }

  /**
   * The subscription to send `d` with, once this engine holds the claim on its next attempt;
   * null when it is not due or has no enabled subscription, 'taken' when the claim is held.
   */
  private async claim(d: Delivery | null, now: number): Promise<Subscription | 'taken' | null> {
    if (this.stopped || !d) return null
    if (d.status !== 'pending' || d.next_attempt_at === null || d.next_attempt_at > now) return null
    // Cached, and dropped on every change (a rotated secret signs the very next attempt).
    const sub = await this.subscriptionOf(d.workspace_id, d.subscription_id)
    if (!sub || !sub.enabled) return null
    const claimTtl = this.opts.timeoutMs + 60_000
    const key = `delivery:${d.id}:${d.attempts + 1}:${d.version}`
    return (await this.coord.claim(key, claimTtl)) ? sub : 'taken'
  }
}

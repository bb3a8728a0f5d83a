// A target's failures and its switch-off: every delivery that exhausted its attempts counts
// against its subscription, a delivered one resets the count, and at the threshold the
// subscription is switched off and the workspace's owners are mailed (docs/events.md).
// Changes of one subscription run one at a time, so concurrent results never lose a count.
import type { Logger } from 'pino'
import type { EventRepo, Subscription } from '../store/events.js'
import type { TenantRepo } from '../store/tenants.js'
import type { Mailer } from './mailer.js'

export class SwitchOff {
  private readonly subLocks = new Map<number, Promise<unknown>>()

  constructor(
    private readonly repo: EventRepo,
    private readonly tenants: TenantRepo,
    private readonly mailer: Mailer,
    private readonly log: Logger,
    private readonly opts: {
      /** Consecutive exhausted deliveries that switch a target off. */
      disableAfter: number
      /** Delays before the retries (the attempts a delivery makes are one more). */
      retryDelaysMs: readonly number[]
    },
    /** Told when a subscription changed (counter, switch-off), to drop cached lists. */
    private readonly onSubscriptionChanged: () => Promise<void>,
  ) {}

  /** Keeps the consecutive-exhausted counter; switches the target off at the threshold. */
  settle(subId: number, result: 'delivered' | 'exhausted'): Promise<void> {
    const prev = this.subLocks.get(subId) ?? Promise.resolve()
    const run = prev.then(async () => {
      const sub = await this.repo.getSubscription(subId)
      if (!sub) return
      // Every change is announced: attempts read the subscription from the outbox's cache,
      // and a delivered attempt resets the counter only when that copy shows failures.
      if (result === 'delivered') {
        if (sub.consecutive_failures !== 0) {
          await this.repo.saveSubscription({ ...sub, consecutive_failures: 0 })
          await this.onSubscriptionChanged()
        }
        return
      }
      const failures = sub.consecutive_failures + 1
      const switchOff = sub.enabled && failures >= this.opts.disableAfter
      await this.repo.saveSubscription({
        ...sub,
        consecutive_failures: failures,
        enabled: sub.enabled && !switchOff,
      })
      await this.onSubscriptionChanged()
      if (switchOff) await this.mailOwners(sub, failures)
    })
    const tail = run.catch(() => {})
    this.subLocks.set(subId, tail)
    void tail.finally(() => {
      if (this.subLocks.get(subId) === tail) this.subLocks.delete(subId)
    })
    return run
  }

  private async mailOwners(sub: Subscription, failures: number): Promise<void> {
    const owners = (await this.tenants.listUsers(sub.workspace_id)).filter((u) => u.owner)
    const subject = `Event webhook switched off: ${sub.url}`
    const body =
      `The event webhook ${sub.url} (subscription ${sub.id}) of workspace ${sub.workspace_id} ` +
      `was switched off after ${failures} consecutive deliveries failed all ` +
      `${1 + this.opts.retryDelaysMs.length} attempts.\n\n` +
      `Fix the receiver, then switch the subscription on again ` +
      `(PATCH /admin/v1/event-subscriptions/${sub.id} {"enabled": true}). Failed deliveries ` +
      `can be sent again from the delivery log (POST /admin/v1/deliveries/{id}/retry).\n`
    await this.mailer.send(
      sub.workspace_id,
      owners.map((u) => u.email),
      subject,
      body,
    )
    this.log.warn(
      { subscription: sub.id, workspace: sub.workspace_id },
      'event webhook switched off',
    )
  }
}

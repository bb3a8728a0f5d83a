// Rate-limit cases shared by the in-process run (test/http/auth.test.ts) and the Redis run
// (test/coord/app-redis.test.ts): 60 requests per minute per token by default, the token's own
// rate_limit_per_minute where set, X-RateLimit-* headers on every token-authenticated answer,
// 429 {message} past the limit, and a fresh allowance in the next minute.
import type { Test } from 'tap'
import type { ManualClock } from '../../src/clock.js'
import { json } from '../../src/http/types.js'
import type { TestServer } from '../helpers/server.js'

export async function makeToken(
  s: TestServer,
  opts: { scopes?: string[]; rateLimit?: number; expiresAt?: string } = {},
): Promise<{ workspaceId: number; userId: number; tokenId: number; token: string }> {
  const ws = await s.admin('POST', '/workspaces', { name: 'rl' })
  const user = await s.admin('POST', `/workspaces/${ws.data.id}/users`, {
    email: 'member@example.com',
    permissions: ['groups.manage'],
  })
  const body: Record<string, unknown> = {
    user_id: user.data.id,
    scopes: opts.scopes ?? ['data:report', 'data:read', 'masterdata:write'],
  }
  if (opts.rateLimit !== undefined) body.rate_limit_per_minute = opts.rateLimit
  if (opts.expiresAt !== undefined) body.expires_at = opts.expiresAt
  const tok = await s.admin('POST', `/workspaces/${ws.data.id}/tokens`, body)
  return {
    workspaceId: ws.data.id,
    userId: user.data.id,
    tokenId: tok.data.id,
    token: tok.data.token,
  }
}

/** Puts the clock one second into a fresh minute so no window rolls over mid-case. */
export function freshMinute(clock: ManualClock): void {
  clock.set((Math.floor(clock.now() / 60_000) + 1) * 60_000 + 1000)
}

export function rateLimitCases(t: Test, s: () => TestServer, clock: ManualClock): void {
  t.test('default: 60 requests per minute; the 61st is 429 {message}', async (t) => {
    freshMinute(clock)
    const { token } = await makeToken(s())
    const remaining: number[] = []
    for (let i = 0; i < 60; i++) {
      const r = await s().call('GET', '/api/v1/ping', { token })
      if (r.status !== 200) t.fail(`request ${i + 1} was ${r.status}`)
      t.equal(r.headers['x-ratelimit-limit'], '60', 'X-RateLimit-Limit', { diagnostic: false })
      remaining.push(Number(r.headers['x-ratelimit-remaining']))
    }
    t.same(
      remaining,
      Array.from({ length: 60 }, (_, i) => 59 - i),
      'X-RateLimit-Remaining counts down from 59 to 0',
    )
    const over = await s().call('GET', '/api/v1/ping', { token })
    t.equal(over.status, 429)
    t.same(Object.keys(over.body), ['message'], 'body is {message}')
    t.match(over.body.message, /60 requests per minute/)
    t.equal(over.headers['x-ratelimit-limit'], '60', 'the 429 carries the headers too')
    t.equal(over.headers['x-ratelimit-remaining'], '0')
    t.ok(Number(over.headers['retry-after']) > 0, 'Retry-After says when to come back')

    clock.advance(60_000)
    const next = await s().call('GET', '/api/v1/ping', { token })
    t.equal(next.status, 200, 'a new minute brings a new allowance')
    t.equal(next.headers['x-ratelimit-remaining'], '59')
  })

  t.test("the token's own rate_limit_per_minute applies, per token", async (t) => {
    freshMinute(clock)
    const a = await makeToken(s(), { rateLimit: 3 })
    const b = await makeToken(s(), { rateLimit: 3 })
    const statuses: number[] = []
    for (let i = 0; i < 4; i++)
      statuses.push((await s().call('GET', '/api/v1/ping', { token: a.token })).status)
    t.same(statuses, [200, 200, 200, 429])
    const other = await s().call('GET', '/api/v1/ping', { token: b.token })
    t.equal(other.status, 200, "another token's allowance is its own")
    t.equal(other.headers['x-ratelimit-limit'], '3')
    t.equal(other.headers['x-ratelimit-remaining'], '2')
  })

  t.test('a 403 for a missing scope still carries the rate-limit headers', async (t) => {
    freshMinute(clock)
    const { token } = await makeToken(s(), { scopes: ['data:report'], rateLimit: 10 })
    const r = await s().call('GET', '/api/v1/__foundation/read', { token })
    t.equal(r.status, 403)
    t.same(Object.keys(r.body), ['message'])
    t.equal(r.headers['x-ratelimit-limit'], '10')
    t.equal(r.headers['x-ratelimit-remaining'], '9')
  })
}

/**
 * Probe routes that exercise the Authenticator the way endpoint groups use it (scope
 * `data:read`; scope `masterdata:write` plus the creator's current `groups.manage`), so the
 * auth rules are tested independently of which endpoints exist yet.
 */
export function addProbeRoutes(s: TestServer): void {
  const auth = s.app.parts.auth
  s.app.router.get('/api/v1/__foundation/read', async (req) => {
    const p = await auth.authenticate(req, { scope: 'data:read' })
    return json(200, { data: p })
  })
  s.app.router.post('/api/v1/__foundation/masterdata', async (req) => {
    const p = await auth.authenticate(req, { scope: 'masterdata:write', groupsManage: true })
    return json(200, { data: p })
  })
}

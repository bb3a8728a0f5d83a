// Pure parts of the events stage: reading.rejected summary, signatures, delivery ids,
// private address ranges.
import crypto from 'node:crypto'
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import type { IngestOutcome, ItemResult } from '../../src/ingest/types.js'
import { rejectionSummary } from '../../src/ingest/rejections.js'
import { signatureHeader, verifySignature } from '../../src/events/signing.js'
import { isPrivateAddress, urlProblem } from '../../src/events/targets.js'
import { uuid7 } from '../../src/events/uuid7.js'
import { Gate } from '../../src/events/gate.js'

const item = (meter: string, status: ItemResult['status']): ItemResult => ({
  meter,
  kind: 'saldo',
  recorded_at: '2030-01-01T00:00:00Z',
  status,
})

t.test('rejectionSummary: exact counts by status, bounded distinct meter sample', async (t) => {
  const results: ItemResult[] = [
    item('A', 'created'),
    item('B', 'rejected_unconfigured'),
    item('B', 'rejected_unconfigured'),
    item('C', 'duplicate'),
    item('D', 'rejected_meter_retired'),
  ]
  for (let i = 0; i < 50; i++) results.push(item(`M${i}`, 'rejected_provision_limit'))
  const outcome: IngestOutcome = { accepted: 1, duplicates: 1, rejected: 53, results }
  const s = rejectionSummary({ ...outcome, source: 'report' })
  t.same(s.counts, {
    rejected_unconfigured: 2,
    rejected_meter_retired: 1,
    rejected_provision_limit: 50,
  })
  t.equal(s.total, 53)
  t.equal(s.source, 'report')
  t.equal(s.meters.length, 20)
  t.same(s.meters.slice(0, 4), ['B', 'D', 'M0', 'M1'], 'distinct, in request order')
  t.equal(rejectionSummary(outcome, 3).meters.length, 3)
  t.equal(rejectionSummary(outcome).source, null)
  const none = rejectionSummary({
    accepted: 1,
    duplicates: 0,
    rejected: 0,
    results: [item('A', 'created')],
  })
  t.same(none, { source: null, counts: {}, total: 0, meters: [] })
})

t.test('signature: the spec algorithm, exact bytes, tolerance both ways', async (t) => {
  const body = Buffer.from('{"a":"ü","b":1}', 'utf8')
  const secret = 'whsec_äbc'
  const header = signatureHeader(secret, 1_900_000_000, body)
  const expected = crypto
    .createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.concat([Buffer.from('1900000000.'), body]))
    .digest('hex')
  t.equal(header, `t=1900000000,v1=${expected}`)
  t.ok(verifySignature(header, body, secret, 1_900_000_000))
  t.ok(verifySignature(header, body, secret, 1_900_000_300))
  t.ok(verifySignature(header, body, secret, 1_899_999_700))
  t.notOk(verifySignature(header, body, secret, 1_900_000_301))
  t.notOk(verifySignature(header, body, secret, 1_899_999_699))
  t.notOk(verifySignature(header, Buffer.from('{"a":"ü", "b":1}'), secret, 1_900_000_000))
  t.notOk(verifySignature(header, body, 'other', 1_900_000_000))
  t.notOk(verifySignature(`v1=${expected}`, body, secret, 1_900_000_000), 't missing')
  t.notOk(verifySignature('t=1900000000', body, secret, 1_900_000_000), 'v1 missing')
  t.notOk(verifySignature(`t=19e8,v1=${expected}`, body, secret, 1_900_000_000), 't not numeric')
})

t.test('uuid7: version 7, strictly increasing within and across milliseconds', async (t) => {
  const ids: string[] = []
  for (let i = 0; i < 5000; i++) ids.push(uuid7(1_900_000_000_000 + Math.floor(i / 1000)))
  for (const id of ids.slice(0, 3))
    t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  t.same([...ids].sort(), ids)
  t.equal(new Set(ids).size, ids.length)
})

t.test('targets: URL shape and private ranges', async (t) => {
  t.equal(urlProblem('https://example.com/x'), null)
  t.ok(urlProblem('ftp://example.com/x'))
  t.ok(urlProblem('not a url'))
  t.ok(urlProblem('https://user:pw@example.com/'))
  t.ok(urlProblem(42))
  for (const ip of [
    '127.0.0.1',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.1.1',
    '::1',
    'fe80::1',
    'fd12::1',
    '::ffff:10.0.0.1',
    '0.0.0.0',
  ])
    t.ok(isPrivateAddress(ip), ip)
  for (const ip of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111'])
    t.notOk(isPrivateAddress(ip), ip)
})

t.test('mailer: outbox row always, and SMTP when SMTP_URL is set', async (t) => {
  const { Mailer } = await import('../../src/events/mailer.js')
  const net = await import('node:net')
  const { pino } = await import('pino')
  // A minimal SMTP server: enough of RFC 5321 for one plain-text message per connection.
  const got: { rcpt: string[]; data: string }[] = []
  const server = net.createServer((sock) => {
    let buf = ''
    let inData = false
    let cur = { rcpt: [] as string[], data: '' }
    sock.write('220 test ESMTP\r\n')
    sock.on('data', (chunk) => {
      buf += chunk.toString('utf8')
      let i
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 2)
        if (inData) {
          if (line === '.') {
            inData = false
            got.push(cur)
            cur = { rcpt: [], data: '' }
            sock.write('250 queued\r\n')
          } else cur.data += line + '\n'
          continue
        }
        const cmd = line.slice(0, 4).toUpperCase()
        if (cmd === 'EHLO' || cmd === 'HELO') sock.write('250 test\r\n')
        else if (cmd === 'RCPT') {
          cur.rcpt.push(line)
          sock.write('250 ok\r\n')
        } else if (cmd === 'DATA') {
          inData = true
          sock.write('354 go\r\n')
        } else if (cmd === 'QUIT') sock.end('221 bye\r\n')
        else sock.write('250 ok\r\n')
      }
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => server.close(() => r())))
  const port = (server.address() as import('node:net').AddressInfo).port
  const stored: unknown[] = []
  const repo = {
    addMails: async (ms: any[]) => {
      stored.push(...ms)
      return ms.map((m, i) => ({ ...m, id: i + 1 }))
    },
  }
  const mailer = new Mailer(
    repo as any,
    new ManualClock(0),
    pino({ level: 'silent' }),
    `smtp://127.0.0.1:${port}`,
  )
  await mailer.send(1, ['a@example.com', 'b@example.com'], 'Switched off', 'Body text')
  t.equal(stored.length, 2, 'outbox rows written first')
  const until = Date.now() + 5000
  while (got.length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  mailer.close()
  t.equal(got.length, 2)
  t.same(got.map((g) => g.rcpt.join()).sort(), [
    'RCPT TO:<a@example.com>',
    'RCPT TO:<b@example.com>',
  ])
  t.match(got[0]!.data, /Subject: Switched off/)
  t.match(got[0]!.data, /Body text/)
})

t.test(
  'Gate: at most `limit` at once, the rest in arrival order, a long queue drains',
  async (t) => {
    const gate = new Gate(3)
    let running = 0
    let peak = 0
    const order: number[] = []
    const n = 5_000
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        gate.run(async () => {
          running++
          peak = Math.max(peak, running)
          order.push(i)
          await new Promise((r) => setImmediate(r))
          running--
        }),
      ),
    )
    t.equal(peak, 3)
    t.equal(order.length, n)
    t.same(order.slice(0, 10), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    t.ok(
      order.every((v, i) => v === i),
      'every run started in arrival order',
    )
    gate.setLimit(10)
    t.equal(gate.current, 10)
  },
)

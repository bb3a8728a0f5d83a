// Composition root: builds every part in dependency order, each from the parts it names,
// registers the routes, starts the HTTP server, and stops the parts in reverse order.
// Nothing is published back into a shared bag: what a part needs is handed to it here.
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { Logger } from 'pino'
import { BOUNDS, type ActorRegistry } from './actors/registry.js'
import type { AdminDeps } from './admin/deps.js'
import { registerAdmin } from './admin/index.js'
import type { ApiDeps } from './api/deps.js'
import { registerApi } from './api/index.js'
import { systemClock, type Clock } from './clock.js'
import type { Config } from './config/index.js'
import type { Coord } from './coord/coord.js'
import { MemoryCoord } from './coord/memory.js'
import { RedisCoord } from './coord/redis.js'
import type { DecoderPool } from './decode/index.js'
import { buildEvents } from './events/build.js'
import { Authenticator } from './http/auth.js'
import { Router } from './http/router.js'
import { startHttpServer, type HttpServer } from './http/server.js'
import { buildIngest } from './ingest/build.js'
import type { Ingest } from './ingest/types.js'
import { ImportRunner } from './jobs/imports.js'
import { Lifecycle } from './lifecycle.js'
import { buildMqtt } from './mqtt/build.js'
import { buildObservability } from './observability/build.js'
import { createLogger } from './observability/logger.js'
import type { Metrics } from './observability/metrics.js'
import { redactUrlCredentials } from './observability/redact.js'
import { registerOpenApi } from './openapi/serve.js'
import { Scheduler } from './scheduler/scheduler.js'
import { addSchedulerTasks } from './scheduler/tasks.js'
import type { Base } from './store/base.js'
import { GroupRepo } from './store/groups.js'
import { MeterRepo } from './store/meters.js'
import { ProfileRepo } from './store/profiles.js'
import { Store } from './store/store.js'
import { TenantRepo } from './store/tenants.js'
import { buildStream, type StreamEndpoint } from './stream/build.js'
import { WebhookRepo } from './webhooks/repo.js'

export interface AppOptions {
  clock?: Clock
  logger?: Logger
  /**
   * Decorates the ingest pipeline every source uses (HTTP, webhooks, stream, MQTT, imports);
   * tests make it fail or wait on demand. /metrics still observes the pipeline underneath.
   */
  wrapIngest?: (pipeline: Ingest) => Ingest
}

/** What the app built, for tests and tools to read. Parts are handed out, never replaced. */
export interface Parts extends AdminDeps, ApiDeps {
  decoder: DecoderPool
  actors: ActorRegistry
  metrics: Metrics
  stream: StreamEndpoint
}

export interface App {
  url: string
  port: number
  parts: Readonly<Parts>
  router: Router
  http: HttpServer
  /** Graceful stop: stop accepting, answer in-flight requests, flush writers, close. */
  close(): Promise<void>
}

export async function startApp(config: Readonly<Config>, opts: AppOptions = {}): Promise<App> {
  const clock = opts.clock ?? systemClock
  const log = opts.logger ?? createLogger(config)
  fs.mkdirSync(config.DATA_DIR, { recursive: true })
  // Parts start in the order added and stop in reverse: the store and coordination close
  // last, the stream stops first.
  const lifecycle = new Lifecycle()

  let built: Assembled | null = null
  try {
    built = await assemble(config, opts, clock, log, lifecycle)
    await lifecycle.start()
  } catch (err) {
    // A failed start (a port in use, an unreachable store) leaves no worker, connection or
    // timer behind: what was built is stopped, so the process can exit with the error.
    await built?.http.drain(0).catch(() => {})
    await lifecycle.stop().catch(() => {})
    throw err
  }
  const { parts, router, http } = built

  let closing: Promise<void> | null = null
  return {
    url: `http://${config.HOST}:${http.port}`,
    port: http.port,
    parts,
    router,
    http,
    close() {
      closing ??= (async () => {
        // Bounded: `docker stop` kills after 10 s. What is still running after the drain
        // deadline is answered 503 (never acknowledged), so nothing acknowledged is lost.
        await http.drain(DRAIN_MS)
        await lifecycle.stop()
      })()
      return closing
    },
  }
}

interface Assembled {
  parts: Parts
  router: Router
  http: HttpServer
}

/** Builds every part bottom-up, registering each with the lifecycle as it is built. */
async function assemble(
  config: Readonly<Config>,
  opts: AppOptions,
  clock: Clock,
  log: Logger,
  lifecycle: Lifecycle,
): Promise<Assembled> {
  const coord = await openCoord(config, clock, log)
  lifecycle.add({ name: 'coord', stop: () => coord.close() })
  const store = await Store.open(config, coord)
  lifecycle.add({ name: 'store', stop: () => store.close() })
  const base: Base = {
    config,
    log,
    clock,
    coord,
    store,
    tenants: new TenantRepo(store, coord),
    // As many new meters remembered as actors kept: a first contact of that many at once
    // then loads no history it does not have.
    meters: new MeterRepo(store, coord, { maxUnused: BOUNDS.maxActors }),
    groups: new GroupRepo(store),
    profiles: new ProfileRepo(store.sql, coord),
  }
  await base.tenants.init()
  await base.meters.init()
  await base.profiles.init()
  const token = adminToken(config)
  const auth = new Authenticator(base.tenants, coord, () => clock.now())
  await coord.subscribe('invalidate', () => auth.invalidate())

  const scheduler = new Scheduler(store.sql, coord, clock, config.SCHEDULER_INTERVAL_S, log)
  lifecycle.add({
    name: 'scheduler',
    start: () => (config.SCHEDULER === 'on' ? scheduler.start() : undefined),
    stop: () => scheduler.stop(),
  })

  // Before every producer, so all of them emit to the durable outbox; stopped after them,
  // so it still takes what they emit while stopping.
  const events = await buildEvents(base)
  const outbox = events.outbox
  lifecycle.add(events.engine)

  const ingestParts = await buildIngest({ ...base, outbox })
  const { decoder, actors, keyQuarantine } = ingestParts
  lifecycle.add({ name: 'decoder', stop: () => decoder.destroy() })
  // Stopped after the actors (no turn starts any more): a lease lingering for a meter's next
  // turn here goes back at once, so another instance takes the meter without waiting.
  lifecycle.add({ name: 'meter-locks', stop: () => ingestParts.locks?.close() })
  const ingest = opts.wrapIngest?.(ingestParts.pipeline) ?? ingestParts.pipeline

  const webhooks = new WebhookRepo(store, coord, () => clock.now())
  await webhooks.init()
  const imports = new ImportRunner({ ...base, ingest, outbox })
  lifecycle.add({
    name: 'imports',
    start: async () => void (await imports.failInterrupted()),
    stop: () => imports.drain(),
  })
  addSchedulerTasks(scheduler, { ...base, outbox, keyQuarantine, imports })

  const stream = buildStream({ ...base, auth, ingest })
  const observability = buildObservability({
    ...base,
    adminToken: token,
    pipeline: ingestParts.pipeline,
    decoder,
    actors,
    stream,
  })
  lifecycle.add(observability)
  const mqtt = buildMqtt({ ...base, ingest, metrics: observability.metrics })
  lifecycle.add(mqtt)
  // Stopped right after the stream, which answers its messages in flight within its own
  // short deadline: only then are meter turns not yet started refused.
  lifecycle.add({ name: 'actors', stop: () => actors.stop() })
  lifecycle.add(stream)

  const parts: Parts = {
    ...base,
    adminToken: token,
    auth,
    scheduler,
    outbox,
    events,
    ingest,
    webhooks,
    imports,
    keyQuarantine,
    mqtt,
    decoder,
    actors,
    metrics: observability.metrics,
    stream,
  }
  const router = new Router()
  registerApi(router, parts)
  registerAdmin(router, parts)
  observability.registerRoutes(router)
  registerOpenApi(router)

  const http = await startHttpServer(router, {
    host: config.HOST,
    port: config.PORT,
    maxBodyBytes: config.MAX_BODY_BYTES,
    logger: log,
    configure: (app) => stream.configureHttp(app),
  })
  return { parts, router, http }
}

async function openCoord(config: Readonly<Config>, clock: Clock, log: Logger): Promise<Coord> {
  if (!config.REDIS_URL) return new MemoryCoord(() => clock.now())
  const rc = new RedisCoord(config.REDIS_URL, coordPrefix(config), () => clock.now())
  await rc.connect().catch(async (err: Error) => {
    await rc.close().catch(() => {})
    throw new Error(
      `could not connect to REDIS_URL ${redactUrlCredentials(config.REDIS_URL!)}: ${err.message}`,
    )
  })
  const policy = await rc.evictionRisk()
  if (policy)
    log.warn(
      { maxmemoryPolicy: policy },
      'Redis may evict keys with a TTL (maxmemory-policy): meter leases and repeat claims ' +
        'among them; set maxmemory-policy noeviction (docs/cluster.md)',
    )
  return rc
}

/** How long SIGTERM waits for in-flight requests before answering the rest 503. */
const DRAIN_MS = 6_000

/** ADMIN_TOKEN, or the one generated at first start into DATA_DIR/admin-token (0600). */
function adminToken(config: Readonly<Config>): string {
  if (config.ADMIN_TOKEN) return config.ADMIN_TOKEN
  const file = path.join(config.DATA_DIR, 'admin-token')
  try {
    return fs.readFileSync(file, 'utf8').trim()
  } catch {
    const token = `mfadmin_${crypto.randomBytes(24).toString('base64url')}`
    fs.writeFileSync(file, token + '\n', { mode: 0o600 })
    return token
  }
}

/**
 * Coordination keys are namespaced by the ClickHouse database they coordinate, so
 * deployments (or test servers) that share one Redis but not one store stay apart.
 */
function coordPrefix(config: Readonly<Config>): string {
  if (!config.CLICKHOUSE_URL) return 'mf:'
  const db = new URL(config.CLICKHOUSE_URL).pathname.replace(/^\//, '') || 'default'
  return `mf:${db}:`
}

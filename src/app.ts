// Composition root: builds every stage from the config, wires the routes, starts the HTTP
// server and the scheduler line, and knows how to stop them in order.
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import type { Logger } from 'pino'
import { registerAdmin } from './admin/index.js'
import { registerApi } from './api/index.js'
import { systemClock, type Clock } from './clock.js'
import type { Config } from './config/index.js'
import type { Coord } from './coord/coord.js'
import { MemoryCoord } from './coord/memory.js'
import { RedisCoord } from './coord/redis.js'
import { Authenticator } from './http/auth.js'
import { Router } from './http/router.js'
import { startHttpServer, type HttpServer } from './http/server.js'
import { Scheduler } from './scheduler/scheduler.js'
import type { Services } from './services.js'
import { Store } from './store/store.js'
import { TenantRepo } from './store/tenants.js'
import { GroupRepo } from './store/groups.js'
import { MeterRepo } from './store/meters.js'
import { ProfileRepo } from './store/profiles.js'
import { MemoryOutbox } from './events/outbox.js'
import { buildStages, type Stage } from './stages.js'
import { createLogger } from './observability/logger.js'
import { redactUrlCredentials } from './observability/redact.js'

export interface AppOptions {
  clock?: Clock
  logger?: Logger
}

export interface App {
  url: string
  port: number
  services: Services
  router: Router
  http: HttpServer
  /** Graceful stop: stop accepting, answer in-flight requests, flush writers, close. */
  close(): Promise<void>
}

export async function startApp(config: Readonly<Config>, opts: AppOptions = {}): Promise<App> {
  const clock = opts.clock ?? systemClock
  const log = opts.logger ?? createLogger(config)
  fs.mkdirSync(config.DATA_DIR, { recursive: true })

  let coord: Coord
  if (config.REDIS_URL) {
    const rc = new RedisCoord(config.REDIS_URL, coordPrefix(config), () => clock.now())
    await rc.connect().catch(async (err: Error) => {
      await rc.close().catch(() => {})
      throw new Error(
        `could not connect to REDIS_URL ${redactUrlCredentials(config.REDIS_URL!)}: ${err.message}`,
      )
    })
    coord = rc
  } else coord = new MemoryCoord(() => clock.now())

  const store = await Store.open(config, coord)
  const tenants = new TenantRepo(store)
  const auth = new Authenticator(tenants, coord, () => clock.now())
  await coord.subscribe('invalidate', () => auth.invalidate())
  const meters = new MeterRepo(store, coord)
  await meters.init()
  const profiles = new ProfileRepo(store.sql, coord)
  await profiles.init()
  const scheduler = new Scheduler(store.sql, coord, clock, config.SCHEDULER_INTERVAL_S, log)

  const services: Services = {
    config,
    log,
    clock,
    coord,
    store,
    tenants,
    meters,
    groups: new GroupRepo(store),
    profiles,
    outbox: new MemoryOutbox(),
    ingest: {
      ingest: () => Promise.reject(new Error('ingest stage not built')),
    },
    auth,
    scheduler,
    adminToken: adminToken(config),
  }
  const stages: Stage[] = await buildStages(services)

  const router = new Router()
  registerApi(router, services)
  registerAdmin(router, services)
  for (const st of stages) st.registerRoutes?.(router)

  const http = await startHttpServer(router, {
    host: config.HOST,
    port: config.PORT,
    maxBodyBytes: config.MAX_BODY_BYTES,
    logger: log,
    configure: (app) => {
      for (const st of stages) st.configureHttp?.(app)
    },
  })
  if (config.SCHEDULER === 'on') scheduler.start()
  for (const st of stages) await st.start?.()

  let closing: Promise<void> | null = null
  return {
    url: `http://${config.HOST}:${http.port}`,
    port: http.port,
    services,
    router,
    http,
    close() {
      closing ??= (async () => {
        // Bounded: `docker stop` kills after 10 s. What is still running after the drain
        // deadline is answered 503 (never acknowledged), so nothing acknowledged is lost.
        await http.drain(DRAIN_MS)
        // The stream stage (stopped first) answers its messages in flight within its own
        // short deadline; only then are meter turns not yet started refused.
        for (const st of [...stages].reverse()) {
          await st.stop?.()
          if (st === services.stream) services.actors?.stop()
        }
        services.actors?.stop()
        await scheduler.stop()
        await store.close()
        await coord.close()
      })()
      return closing
    },
  }
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

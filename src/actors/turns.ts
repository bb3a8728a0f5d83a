// Turns of many actors run together: each phase of MeterActor (hydrate, dedupe, flag,
// restate, write, settle) runs for every actor of the batch before the next one, so the
// store look-ups of all of them are one query each (HistoryLoader merges the calls of a
// tick), their rows one write, and a request of 500 meters costs a handful of promises
// instead of a dozen per meter (GC was a quarter of the ingest thread).
// Each actor is in at most one running batch (registry.ts), so its turns stay one at a time.
import { apiError } from '../errors.js'
import { BodyWriter } from '../store/body-writer.js'
import { FeedRows } from '../store/feed-rows.js'
import { chTime } from '../store/sql.js'
import { deleteStatusVersions } from '../store/status.js'
import type { OutboxEvent } from '../events/outbox.js'
import type { MeterActor, Turn } from './meter-actor.js'
import { flagTurn, restateTurn, statusReportsOf } from './turn-phases.js'
import { NONE } from './turn-lists.js'
import type { ActorEnv } from './actor-env.js'
import type { Joined } from './actor-reading.js'
import { NEIGHBOURHOOD } from './quality/index.js'

export interface BatchEntry {
  actor: MeterActor
  /** The requests that joined this actor's turn, in arrival order. */
  group: Joined[]
}

/** Runs one turn per entry and answers every joined request; never rejects. */
export async function runTurns(env: ActorEnv, batch: BatchEntry[]): Promise<void> {
  if (env.stopping) {
    const err = apiError('Unavailable', 'Shutting down; retry the request.')
    for (const e of batch) for (const j of e.group) j.done(err, j.slot)
    return
  }
  const locks = env.locks
  let turns: Turn[]
  if (!locks) {
    try {
      turns = batch.map(begin)
    } catch (err) {
      for (const e of batch) for (const j of e.group) j.done(err, j.slot)
      return
    }
    try {
      await phases(env, turns)
    } catch (err) {
      // Not expected (each phase fails its own turns): then none of them may count.
      for (const t of turns) fail(t, err)
    }
  } else {
    // Across instances each meter's turn runs under its own lock (and reloads when another
    // instance wrote since); the turns whose locks were taken together run as one batch.
    const held: (Turn | undefined)[] = new Array(batch.length)
    const outcomes = await locks.withLocks(
      batch.map((e) => e.actor),
      async (locked) => {
        const lockedTurns = locked.map(({ index, changed, untouched, since, note, noting }) => {
          const e = batch[index]!
          // A meter this instance has just created, with no turn ended anywhere, has no
          // history to load: its empty window is complete (as without locks). One whose
          // window misses only what other instances wrote since a version catches up, from
          // the note they left where there is one, else from the store.
          if (
            changed &&
            !(untouched && e.actor.fresh) &&
            !(note !== null && e.actor.behindBy(note)) &&
            !(since !== null && e.actor.behind(since))
          )
            e.actor.reset()
          const t = (held[index] = begin(e))
          t.noting = noting
          return t
        })
        await phases(env, lockedTurns)
      },
    )
    turns = batch.map((e, i) => {
      const o = outcomes[i]!
      const t = (held[i] ??= begin(e))
      if ('error' in o) fail(t, o.error)
      else e.actor.seen = o.seen
      return t
    })
  }
  batch.forEach((e, i) => answer(e.group, turns[i]!))
}

/**
 * The turn of one entry: the readings of its requests, in arrival order (of two carrying
 * the same reading, the earlier request's is the one stored: dedupe's sort is stable).
 */
function begin(e: BatchEntry): Turn {
  const group = e.group
  // The newest meter settings.
  const meter = group[group.length - 1]!.meter
  if (group.length === 1) return e.actor.begin(meter, group[0]!.readings)
  return e.actor.begin(
    meter,
    group.flatMap((j) => j.readings),
  )
}

/** Every joined request is answered: the readings carry their verdicts, or the turn failed. */
function answer(group: Joined[], turn: Turn): void {
  for (const j of group) j.done(turn.failed, j.slot)
}

/** Nothing of a failed turn may count as stored: its actor reloads from the store. */
function fail(turn: Turn, err: unknown): void {
  if (turn.failed === undefined) turn.failed = err
  turn.actor.reset()
}

/** `fn` for each turn still running; a throw fails that turn only. */
function step(turns: Turn[], fn: (t: Turn) => void): void {
  for (const t of turns)
    if (t.failed === undefined)
      try {
        fn(t)
      } catch (err) {
        fail(t, err)
      }
}

/** As `step` for look-ups: those of all turns are asked in the same tick, then awaited. */
async function stepAsync(turns: Turn[], fn: (t: Turn) => Promise<void> | null): Promise<void> {
  const waits: Promise<void>[] = []
  for (const t of turns) {
    if (t.failed !== undefined) continue
    try {
      const p = fn(t)
      if (p) waits.push(p.catch((err) => fail(t, err)))
    } catch (err) {
      fail(t, err)
    }
  }
  if (waits.length) await Promise.all(waits)
}

async function phases(env: ActorEnv, turns: Turn[]): Promise<void> {
  const h = env.history
  await stepAsync(turns, (t) => (t.tl ? t.actor.catchUp(t) : t.actor.hydrate(t)))
  step(turns, (t) => t.actor.dedupe(t))
  await stepAsync(turns, (t) =>
    t.ask
      ? h
          .existing(
            t.meter.workspace_id,
            t.meter.id,
            t.ask.map((r) => ({ kind: r.kind, t: r.recordedAt })),
          )
          .then((stored) => t.actor.dropStored(t, stored))
      : null,
  )
  await stepAsync(turns, (t) => {
    const far = t.actor.far(t)
    if (!far.length) return null
    return h
      .neighbourhood(t.meter.workspace_id, t.meter.id, far, NEIGHBOURHOOD)
      .then((rows) => t.actor.addNeighbours(t, rows, far))
  })
  const now = chTime(env.now())
  step(turns, (t) => flagTurn(env, t, now))
  await stepAsync(turns, (t) =>
    t.restate.length
      ? h
          .rows(t.meter.workspace_id, t.meter.id, t.restate)
          .then((rows) => restateTurn(env, t, rows))
      : null,
  )
  step(turns, (t) => statusReportsOf(env, t))
  await write(env, turns)
  // Status changes, one outbox write per workspace: a failed write fails the turns it carried.
  const changes = new Map<number, { events: OutboxEvent[]; turns: Turn[] }>()
  step(turns, (t) => {
    const ev = t.actor.settle(t)
    if (!ev) return
    let c = changes.get(ev.ws)
    if (!c) changes.set(ev.ws, (c = { events: [], turns: [] }))
    c.events.push({ event: 'meter.status_changed', data: ev.payload })
    c.turns.push(t)
  })
  if (changes.size)
    await Promise.all(
      [...changes].map(([ws, c]) =>
        env.outbox.emitMany(ws, c.events).catch((err) => {
          for (const t of c.turns) fail(t, err)
        }),
      ),
    )
}

/**
 * Phase 4, write: the status reports of every turn, then their readings, each as one
 * write. No multi-table transaction in ClickHouse: if the readings cannot be stored the
 * status reports are taken back (by their exact versions), so a failed turn leaves nothing
 * behind and its retry stores both.
 */
async function write(env: ActorEnv, turns: Turn[]): Promise<void> {
  const live = turns.filter((t) => t.failed === undefined)
  let statusRows = ''
  let statusCount = 0
  // The rows and their rollup feed rows go into bytes outside the V8 heap, and the rows'
  // objects are let go: nothing of them has to live through the INSERT. A gateway turn's
  // rows and feed lines were a quarter of what the young generation copied at each
  // scavenge (live-object heap profile), and most of that was promoted and died in old space.
  const body = new BodyWriter(env.store.bodyBlocks)
  let rows = 0
  for (const t of live) rows += t.rows.length
  const feed = env.store.rollupFedApart ? new FeedRows(rows) : null
  for (const t of live) {
    if (t.status) {
      statusRows += t.status.rows
      statusCount += t.status.count
    }
    t.actor.body(t, body)
    if (feed) t.actor.feedRows(t, feed)
    t.actor.keepNote(t)
    t.rows = NONE
  }
  try {
    if (statusCount) await env.store.statusReports.write(statusRows, statusCount)
  } catch (err) {
    for (const t of live) fail(t, err)
    return
  }
  try {
    await env.store.readings.write(body.takeParts(), rows, undefined, feed?.take())
    // The INSERT has ended: its blocks serve the next body. Not after a failure, where a
    // transport may not be done with them (they are left to the GC then).
    body.release()
  } catch (err) {
    await Promise.all(
      live.map((t) =>
        t.status?.versions.length
          ? deleteStatusVersions(
              env.store.sql,
              t.meter.workspace_id,
              t.meter.id,
              t.status.versions,
            ).catch(() => {})
          : null,
      ),
    )
    for (const t of live) fail(t, err)
  }
}

// Step 1 of the pipeline: check the whole batch and work out, without writing anything,
// what every item means — its meter identifier, its profile, its readings (decoded where
// the profile says so). Any schema violation is one 422 for the whole batch.
import { validationError, type FieldErrors } from '../errors.js'
import { compile } from '../validate.js'
import { inspectTelegram, type DecoderPool, type TelegramOutcome } from '../decode/index.js'
import { validateLayout } from '../decode/frame-layout.js'
import type { Meter } from '../store/meter-row.js'
import type { MeterRepo } from '../store/meters.js'
import { isPlainGenericItem } from '../store/reading-row.js'
import { tsvText } from '../store/sql.js'
import type { Profile, ProfileRepo } from '../store/profiles.js'
import { GenericItem, PayloadItem } from './schema.js'
import { parseIsoTimestamp } from './timestamps.js'
import type { Coord } from '../coord/coord.js'
import { BatchErrors } from './batch-errors.js'
import { giveUpClaims, markRepeats, type RepeatCheck } from './mark-repeats.js'
import type { PreparedItem } from './prepared-item.js'
import { readByProfile, type CheckedItem, type Inspection, type Item } from './read-payload.js'

/** Five minutes of clock skew are tolerated for device time. */
export const FUTURE_TOLERANCE_MS = 5 * 60_000
/** ClickHouse DateTime64 starts at 1900: an earlier reading could not be stored as sent. */
export const EARLIEST_RECORDED_AT = Date.UTC(1900, 0, 1)

export interface PrepareDeps {
  meters: MeterRepo
  profiles: ProfileRepo
  decoder: DecoderPool | null
  /** Repeats of one telegram heard by several gateways (ingest/telegram-repeats.ts). */
  coord?: Coord
  telegramRepeatWindowMs?: number
  now: () => number
  maxItems: number
}

const genericCheck = compile(GenericItem)
const payloadCheck = compile(PayloadItem)

/** The workspace's profiles by key: the latest version, or an exact one. */
function profileIndex(profiles: readonly Profile[]) {
  const latest = new Map<string, Profile>()
  // By key, then version: asked once per item, a `key@version` string each time was a
  // visible share of the batch's allocations.
  const exact = new Map<string, Map<number, Profile>>()
  for (const p of profiles) {
    let versions = exact.get(p.key)
    if (!versions) exact.set(p.key, (versions = new Map()))
    versions.set(p.version, p)
    const l = latest.get(p.key)
    if (!l || p.version > l.version) latest.set(p.key, p)
  }
  return (key: string, version?: number): Profile | null =>
    (version === undefined ? latest.get(key) : exact.get(key)?.get(version)) ?? null
}
type ProfileOf = ReturnType<typeof profileIndex>

export async function prepareBatch(
  deps: PrepareDeps,
  ws: number,
  items: unknown[],
  prefix = 'readings',
): Promise<PreparedItem[]> {
  if (items.length === 0)
    throw validationError({ [prefix]: [`The ${prefix} field must contain at least one item.`] })
  if (items.length > deps.maxItems)
    throw validationError({
      [prefix]: [
        `The ${prefix} field may contain at most ${deps.maxItems} items (got ${items.length}).`,
      ],
    })

  // One await per batch for meters and profiles; per item only synchronous look-ups.
  const meterOf = await deps.meters.lookup(ws)
  const profileOf = profileIndex(await deps.profiles.all(ws))
  const errs = new BatchErrors()
  const now = deps.now()
  const prepared: PreparedItem[] = []
  // Profiles declared for identifiers first seen in this batch: a later item contradicting
  // an earlier declaration is treated like a contradiction of a confirmed assignment.
  const batchProfiles = new Map<string, string>()

  for (let i = 0; i < items.length; i++) {
    const key = `${prefix}.${i}`
    const item = checkItem(items[i], key, now, profileOf, errs)
    if (!item) continue
    const who = identify(item, key, errs)
    if (!who) continue
    const meter = meterOf(who.identifier)
    const profile = assignProfile(item, who.identifier, meter, key, profileOf, batchProfiles, errs)
    if (!profile) continue
    const base = preparedItem(i, item, who.identifier, meter, profile)
    const ready = readByProfile(base, item, who.inspection, key, errs)
    if (ready) prepared.push(ready)
  }

  if (!errs.any) await decodeFrames(deps, prepared, prefix, errs.errors)
  if (errs.any) throw validationError(errs.errors)
  if (deps.decoder) await decodeTelegrams(deps, deps.decoder, ws, prepared)
  else
    for (const it of prepared)
      if (it.telegram)
        it.rejection = { status: 'rejected_undecodable', reason: 'no decoder available' }
  return prepared
}

/** The checks every item passes whatever its profile: shape, recorded_at, a finite value. */
function checkItem(
  raw: unknown,
  key: string,
  now: number,
  profileOf: ProfileOf,
  errs: BatchErrors,
): CheckedItem | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return errs.add(key, `The ${key} item must be an object.`)
  const item = raw as Item
  const hasPayload = 'payload' in item
  // Shape B named by its profile: a missing payload is the error, not kind/value/unit.
  if (!hasPayload && typeof item.profile === 'string' && item.profile !== 'generic') {
    if (profileOf(item.profile))
      return errs.add(
        `${key}.payload`,
        `The payload field is required for profile ${item.profile}.`,
      )
  }
  const valid = hasPayload ? payloadCheck.Check(raw) : genericCheck.Check(raw)
  if (!valid) return errs.schema(hasPayload ? PayloadItem : GenericItem, item, key)
  const recordedAt = parseIsoTimestamp(item.recorded_at)
  if (recordedAt === null)
    return errs.add(`${key}.recorded_at`, 'The recorded_at field must be an ISO 8601 date-time.')
  if (recordedAt < EARLIEST_RECORDED_AT)
    return errs.add(
      `${key}.recorded_at`,
      'The recorded_at field must not lie before 1900-01-01T00:00:00Z.',
    )
  if (recordedAt > now + FUTURE_TOLERANCE_MS)
    return errs.add(
      `${key}.recorded_at`,
      'The recorded_at field must not lie more than 5 minutes in the future.',
    )
  if (typeof item.value === 'number' && !Number.isFinite(item.value))
    return errs.add(`${key}.value`, 'The value field must be a finite number.')
  return { item, hasPayload, recordedAt }
}

/** The meter identifier: a supplied meter always wins; wmbus_oms derives it from the link layer. */
function identify(
  c: CheckedItem,
  key: string,
  errs: BatchErrors,
): { identifier: string; inspection: Inspection | null } | null {
  const { item } = c
  let identifier = item.meter as string | undefined
  let inspection: Inspection | null = null
  if (c.hasPayload && (item.profile === 'wmbus_oms' || identifier === undefined)) {
    const payload = item.payload as Record<string, unknown>
    if (
      item.profile === 'wmbus_oms' &&
      typeof payload === 'object' &&
      typeof payload.telegram === 'string'
    ) {
      inspection = inspectTelegram(payload.telegram)
      if (!inspection.ok)
        return errs.add(`${key}.payload.telegram`, `The telegram is invalid: ${inspection.error}.`)
      identifier ??= inspection.identifier
    }
  }
  if (identifier === undefined)
    return errs.add(
      `${key}.meter`,
      'The meter field is required unless the profile derives it from the payload (wmbus_oms).',
    )
  return { identifier, inspection }
}

/** The item's effective profile (api-v1.md, "Profile assignment of a meter"). */
function assignProfile(
  c: CheckedItem,
  identifier: string,
  meter: Meter | null,
  key: string,
  profileOf: ProfileOf,
  batchProfiles: Map<string, string>,
  errs: BatchErrors,
): Profile | null {
  const declaredKey = c.item.profile as string | undefined
  if (declaredKey === undefined) {
    const assigned = batchProfiles.get(identifier) ?? meter?.profile_key ?? 'generic'
    const profile =
      meter && assigned === meter.profile_key
        ? profileOf(meter.profile_key, meter.profile_version)
        : profileOf(assigned)
    return profile ?? profileOf('generic')
  }
  const profile = profileOf(declaredKey)
  if (!profile) return errs.add(`${key}.profile`, `Unknown profile ${declaredKey}.`)
  if (meter && !meter.profile_needs_review && meter.profile_key !== declaredKey)
    return errs.add(
      `${key}.profile`,
      `Profile ${declaredKey} contradicts the confirmed profile ${meter.profile_key} of meter ${identifier}; reassign the meter first.`,
    )
  const earlier = batchProfiles.get(identifier)
  if (earlier && earlier !== declaredKey)
    return errs.add(
      `${key}.profile`,
      `Profile ${declaredKey} contradicts profile ${earlier} declared earlier in this batch for meter ${identifier}.`,
    )
  batchProfiles.set(identifier, declaredKey)
  // The meter keeps its own version of a profile it is already on.
  if (meter && meter.profile_key === declaredKey)
    return profileOf(declaredKey, meter.profile_version) ?? profile
  return profile
}

/** One object per item, filled in by its reader (no spread copies: this runs for every reading). */
function preparedItem(
  index: number,
  c: CheckedItem,
  identifier: string,
  meter: Meter | null,
  profile: Profile,
): PreparedItem {
  const { item, hasPayload } = c
  const p: PreparedItem = {
    index,
    identifier,
    recordedAt: c.recordedAt,
    recordedAtText: item.recorded_at,
    profile,
    declared: item.profile !== undefined,
    meter,
    rawFlags: null,
    statuses: null,
    rawPayload: '',
    kind: 'saldo',
    readings: [],
    pulse: undefined,
    rejection: undefined,
    telegram: undefined,
    frame: undefined,
    claim: undefined,
  }
  // A generic item of the usual shape is written from its parts with its row (its own
  // identifier and recorded_at here, its kind, value and unit there). Telegrams get theirs
  // from the decoder (telegram + decoded records); a rejected telegram stores nothing, so its
  // payload is never serialised here.
  if (!hasPayload) p.rawPayload = isPlainGenericItem(item) ? p : tsvText(JSON.stringify(item))
  else if (profile.key !== 'wmbus_oms') p.rawPayload = tsvText(JSON.stringify(item.payload))
  return p
}

/** Binary frames of workspace decoder profiles, grouped per profile version. */
async function decodeFrames(
  deps: PrepareDeps,
  prepared: PreparedItem[],
  prefix: string,
  errors: FieldErrors,
): Promise<void> {
  const groups = new Map<string, PreparedItem[]>()
  for (const it of prepared) {
    if (it.frame === undefined) continue
    const k = `${it.profile.key}@${it.profile.version}`
    if (!groups.has(k)) groups.set(k, [])
    groups.get(k)!.push(it)
  }
  for (const list of groups.values()) {
    const v = validateLayout(list[0]!.profile.decoder)
    if (!v.ok) {
      for (const it of list)
        (errors[`${prefix}.${it.index}.payload`] ??= []).push(
          `Profile ${it.profile.key} has an invalid decoder.`,
        )
      continue
    }
    if (!deps.decoder) throw new Error('decoder pool not available')
    const outcomes = await deps.decoder.decodeFrames(
      v.layout,
      list.map((it) => it.frame!),
    )
    // A payload without a status field makes no status report (api-v1.md, Device status).
    const reportsStatus = v.layout.fields.some((f) => f.name === 'status')
    list.forEach((it, j) => {
      const o = outcomes[j]!
      if (!o.ok) {
        ;(errors[`${prefix}.${it.index}.payload`] ??= []).push(
          `The frame does not match the layout of profile ${it.profile.key}: ${o.error}.`,
        )
        return
      }
      // NaN and ±Infinity (f32/f64 frames) cross the worker boundary as JSON null.
      if (typeof o.value !== 'number' || !Number.isFinite(o.value)) {
        ;(errors[`${prefix}.${it.index}.payload`] ??= []).push(
          `The frame decodes to a value that is not a finite number (profile ${it.profile.key}).`,
        )
        return
      }
      it.readings[0]!.value = o.value
      it.rawFlags = reportsStatus ? o.status : null
    })
  }
}

/**
 * Telegrams, with the AES key of meters that exist already (new meters have none). Repeats
 * of one telegram heard by several gateways become `duplicate`: a plain telegram's before it
 * is decoded (its inspection gave the fingerprint), an encrypted one's once it is decrypted.
 */
async function decodeTelegrams(
  deps: PrepareDeps,
  decoder: DecoderPool,
  ws: number,
  prepared: PreparedItem[],
): Promise<void> {
  const telegrams = prepared.filter((it) => it.telegram)
  if (!telegrams.length) return
  const check: RepeatCheck | null =
    deps.coord && deps.telegramRepeatWindowMs
      ? { coord: deps.coord, windowMs: deps.telegramRepeatWindowMs }
      : null
  const plain = check ? telegrams.filter((it) => it.telegram!.fingerprint !== null) : []
  const copies =
    check && plain.length
      ? await markRepeats(
          check,
          ws,
          plain,
          plain.map((it) => it.telegram!.fingerprint!),
        )
      : null
  const jobs = copies ? telegrams.filter((it) => !it.rejection) : telegrams
  if (!jobs.length) return
  let outcomes: TelegramOutcome[]
  try {
    outcomes = await decoder.decodeTelegrams(
      jobs.map((it) => ({ hex: it.telegram!.hex, key: it.meter?.wmbus_key ?? null, scope: ws })),
    )
  } catch (err) {
    // Nothing of this batch is stored: its first sightings give their claims up.
    await giveUpClaims(check?.coord, jobs)
    throw err
  }
  // Encrypted telegrams are checked for repeats once decrypted, by the decoder's fingerprint.
  const decrypted: PreparedItem[] = []
  const fingerprints: number[] = []
  jobs.forEach((it, j) => {
    const o = outcomes[j]!
    if (o.status === 'ok') {
      it.readings = [{ kind: 'saldo', value: o.value, unit: o.unit }]
      it.rawFlags = o.rawFlags
      it.statuses = o.statuses
      // {"telegram":hex,"decoded":{link,records}} as a TabSeparated field, built by the worker
      it.rawPayload = o.rawTsvBytes ?? tsvText(o.rawPayload)
      if (check && it.telegram!.fingerprint === null) {
        decrypted.push(it)
        fingerprints.push(o.fingerprint)
      }
    } else if (o.status === 'invalid') {
      // inspectTelegram passed, so the frame is well formed; the decoder found more.
      it.rejection = { status: 'rejected_undecodable', reason: o.reason }
    } else it.rejection = { status: o.status, reason: o.reason }
  })
  if (copies) {
    // A plain telegram the decoder refused is not remembered: its claim goes at once, and a
    // copy of it in this batch gets its verdict, not `duplicate` of nothing.
    for (const [copy, first] of copies) if (first.rejection) copy.rejection = first.rejection
    await giveUpClaims(
      check?.coord,
      plain.filter((it) => it.rejection),
    )
  }
  if (check && decrypted.length) await markRepeats(check, ws, decrypted, fingerprints)
}

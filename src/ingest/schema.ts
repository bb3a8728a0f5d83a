// The two item shapes of POST /reportData (api-v1.md), as compiled TypeBox schemas.
import { Type, type Static } from '@sinclair/typebox'
import { UNITS } from '../domain/units.js'

export const Kind = Type.Union([Type.Literal('consumption'), Type.Literal('saldo')])
export const UnitName = Type.Union(UNITS.map((u) => Type.Literal(u)))
const Identifier = Type.String({ minLength: 1, maxLength: 128 })
const ProfileKey = Type.String({ minLength: 1, maxLength: 64 })
const Timestamp = Type.String({ minLength: 1, maxLength: 64 })
const Finite = Type.Number()

/** Shape A (generic profile): plain kind/value/unit. */
export const GenericItem = Type.Object(
  {
    meter: Identifier,
    profile: Type.Optional(ProfileKey),
    kind: Kind,
    value: Finite,
    unit: UnitName,
    recorded_at: Timestamp,
  },
  { additionalProperties: false },
)
export type GenericItem = Static<typeof GenericItem>

/** Shape B (profile payload): an object for the profile's schema or one encoded string. */
export const PayloadItem = Type.Object(
  {
    meter: Type.Optional(Identifier),
    profile: Type.Optional(ProfileKey),
    payload: Type.Union([
      Type.Object({}, { additionalProperties: true }),
      Type.String({ minLength: 1 }),
    ]),
    unit: Type.Optional(UnitName),
    recorded_at: Timestamp,
  },
  { additionalProperties: false },
)
export type PayloadItem = Static<typeof PayloadItem>

export const PulsePayload = Type.Object(
  {
    pulses: Type.Optional(Type.Number({ minimum: 0 })),
    pulse_delta: Type.Optional(Type.Number()),
  },
  { additionalProperties: false },
)

export const TelegramPayload = Type.Object(
  { telegram: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
)

/** Object form of workspace (meter-model) profiles. */
export const ObjectPayload = Type.Object(
  {
    value: Finite,
    status: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 64 }),
    ),
  },
  { additionalProperties: false },
)

export const ReportBody = Type.Object({ readings: Type.Array(Type.Unknown()) })

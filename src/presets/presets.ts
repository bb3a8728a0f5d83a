// Mapping presets: ready-made JSONata mappings (the webhook mapping format, docs/webhooks.md)
// for what the field sends, usable by name on webhook endpoints and MQTT subscriptions
// (`{"preset": "chirpstack-v4"}`). Each carries a sample message; test/presets pins every
// preset against its sample. Helpers such as $base64ToHex are in ./helpers.ts.
//
// Identity: the spec identifies a reading by (meter, kind, recorded_at), so a network
// server's own uplink id (ChirpStack `deduplicationId`, TTS `correlation_ids`) cannot
// become part of it. What the presets do instead is take recorded_at from the uplink
// itself (never the clock), so a network server's retry of one uplink carries the same
// triple and is answered `duplicate`. The uplink ids are not stored.
import type { MappingDef } from '../webhooks/mapping.js'

export interface MappingPreset {
  name: string
  description: string
  mapping: MappingDef
  /** One message as the source sends it; documented and tested. */
  sample: unknown
}

/** A LoRaWAN uplink: a wM-Bus telegram in the payload goes to wmbus_oms, else the decoded object. */
const lorawanItems = (payloadB64: string, decoded: string) =>
  `(
  $hex := $base64ToHex(${payloadB64});
  $isWmbusTelegram($hex) ? {"telegram": $hex} :
  $type(${decoded}.readings) = "array" ? ${decoded}.readings :
  $type(${decoded}) = "object" ? ${decoded} : {}
)`

const lorawanFields = (devEui: string, time: string): MappingDef['fields'] => ({
  // A bridged wM-Bus meter is named by its telegram (link-layer id), not by the radio.
  meter: `$not($exists(telegram)) ? ($exists(meter) ? meter : ${devEui})`,
  profile: `$exists(telegram) ? "wmbus_oms" : profile`,
  payload: `$exists(telegram) ? {"telegram": telegram} : payload`,
  kind: 'kind',
  value: 'value',
  unit: 'unit',
  recorded_at: `$exists(recorded_at) ? $isoTime(recorded_at) : $isoTime(${time})`,
})

const chirpstackV4: MappingPreset = {
  name: 'chirpstack-v4',
  description:
    'ChirpStack v4 HTTP/MQTT integration "up" events. meter = deviceInfo.devEui, recorded_at = time. ' +
    'A payload (data, base64) holding a wM-Bus telegram is stored through wmbus_oms; otherwise the ' +
    'codec output `object` is one reading {kind, value, unit} or {readings: [...]}. Other events ' +
    '(join, status, ack, ...) carry no reading and map to no items.',
  mapping: {
    items: `($exists(data) or $exists(object)) ? ${lorawanItems('data', 'object')}`,
    fields: lorawanFields('$$.deviceInfo.devEui', '$$.time'),
  },
  sample: {
    deduplicationId: '3ac7e3c4-4401-4b8d-9386-a5c902f9202d',
    time: '2025-02-28T10:00:00.123456+00:00',
    deviceInfo: {
      tenantId: '52f14cd4-c6f1-4fbd-8f87-4025e1d49242',
      tenantName: 'ChirpStack',
      applicationId: '17c82e96-be03-4f38-aef3-f83d48582d97',
      applicationName: 'water',
      deviceProfileId: '14855bf7-d10d-4aee-b618-ebfcb64dc7ad',
      deviceProfileName: 'watermeter',
      deviceName: 'basement',
      devEui: '0101010101010101',
      tags: {},
    },
    devAddr: '00189440',
    adr: true,
    dr: 1,
    fCnt: 10,
    fPort: 1,
    confirmed: false,
    data: 'AQIDBA==',
    object: { kind: 'saldo', value: 123.456, unit: 'm3' },
    rxInfo: [{ gatewayId: '0016c001f153a14c', rssi: -57, snr: 10 }],
    txInfo: { frequency: 868100000 },
  },
}

const theThingsStackV3: MappingPreset = {
  name: 'the-things-stack-v3',
  description:
    'The Things Stack v3 webhook/MQTT uplink messages. meter = end_device_ids.dev_eui, ' +
    'recorded_at = uplink_message.received_at (else received_at). A frm_payload holding a ' +
    'wM-Bus telegram goes to wmbus_oms; otherwise decoded_payload is one reading {kind, value, ' +
    'unit} or {readings: [...]}. Other messages (join_accept, downlink_*) map to no items.',
  mapping: {
    items: `$exists(uplink_message) ? ${lorawanItems('uplink_message.frm_payload', 'uplink_message.decoded_payload')}`,
    fields: lorawanFields(
      '$$.end_device_ids.dev_eui',
      '($exists($$.uplink_message.received_at) ? $$.uplink_message.received_at : $$.received_at)',
    ),
  },
  sample: {
    end_device_ids: {
      device_id: 'basement-water',
      application_ids: { application_id: 'water' },
      dev_eui: '70B3D57ED0000001',
      join_eui: '0000000000000000',
      dev_addr: '260B1234',
    },
    correlation_ids: ['as:up:01HX2ZJ8R6Y5Q7T8V9W0X1Y2Z3', 'gs:uplink:01HX2ZJ8QZ'],
    received_at: '2025-02-28T10:00:00.456789012Z',
    uplink_message: {
      session_key_id: 'AYZ9kR3B3T+0pG1kW2d0Vw==',
      f_port: 1,
      f_cnt: 10,
      frm_payload: 'AQIDBA==',
      decoded_payload: { kind: 'saldo', value: 45.5, unit: 'kwh' },
      rx_metadata: [{ gateway_ids: { gateway_id: 'gw-1' }, rssi: -57, snr: 9.5 }],
      settings: { data_rate: { lora: { bandwidth: 125000, spreading_factor: 7 } } },
      received_at: '2025-02-28T10:00:00.400000000Z',
      consumed_airtime: '0.061696s',
    },
  },
}

const wmbusmetersJson: MappingPreset = {
  name: 'wmbusmeters-json',
  description:
    'wmbusmeters JSON (MQTT topic wmbusmeters/<name>, or its HTTP shell hook). meter = id, ' +
    'kind = saldo, value/unit from the first total_*_m3 or total_*_kwh field (total_m3 and ' +
    'total_energy_consumption_kwh first), recorded_at = timestamp. A message without such a ' +
    'register is unmappable (value). With a JSON array, each element is one message.',
  mapping: {
    fields: {
      meter: 'id',
      kind: '$exists($wmbusmetersTotal($)) ? "saldo"',
      value: '$wmbusmetersTotal($).value',
      unit: '$wmbusmetersTotal($).unit',
      recorded_at: '$isoTime(timestamp)',
    },
  },
  sample: {
    _: 'telegram',
    media: 'water',
    meter: 'multical21',
    name: 'MyTapWater',
    id: '76348799',
    total_m3: 6.408,
    target_m3: 6.408,
    max_flow_m3h: 0,
    flow_temperature_c: 127,
    external_temperature_c: 19,
    current_status: 'DRY',
    time_dry: '22-31 days',
    time_reversed: '',
    time_leaking: '',
    time_bursting: '',
    timestamp: '2025-02-28T10:00:00Z',
    device: 'rtlwmbus[00000001]',
    rssi_dbm: -73,
  },
}

const rawTelegram: MappingPreset = {
  name: 'wmbus-raw-telegram',
  description:
    'Raw wM-Bus telegrams from gateways (over MQTT or webhook), stored through wmbus_oms. ' +
    'Accepts JSON {telegram, time|timestamp|recorded_at, meter?} (or an array of them), or a ' +
    'plain-text rtl-wmbus line "T1;1;1;<time>;<rssi>;<...>;<id>;0x<telegram>". recorded_at ' +
    'must come from the message: a bare hex telegram without a time is unmappable.',
  mapping: {
    items: `$type($) = "string" ? (
  $p := $split($, ";");
  $count($p) >= 7 ? {"telegram": $p[-1], "time": $p[3]} : {"telegram": $}
) : $`,
    fields: {
      meter: 'meter',
      profile: '"wmbus_oms"',
      payload: '$exists($telegramHex(telegram)) ? {"telegram": $telegramHex(telegram)}',
      recorded_at: `$isoTime($exists(time) ? time : ($exists(timestamp) ? timestamp : recorded_at))`,
    },
  },
  sample: {
    telegram:
      '844442040011223320027A3E0000200E840017495200000004FFA0150000000004FFA1150000000004FFA2150000000004FFA3150000000007FFA600000000000000000007FFA700000000000000000007FFA800000000000000000007FFA90000000000000000000DFD8E0007302E38322E31420DFFAA000B3030312D313131203332421F',
    time: '2025-02-28T10:00:00Z',
  },
}

export const MAPPING_PRESETS: readonly MappingPreset[] = [
  chirpstackV4,
  theThingsStackV3,
  wmbusmetersJson,
  rawTelegram,
]

export const PRESET_NAMES = MAPPING_PRESETS.map((p) => p.name)

export function findPreset(name: string): MappingPreset | undefined {
  return MAPPING_PRESETS.find((p) => p.name === name)
}

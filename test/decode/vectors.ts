// Helpers shared by the decoder tests: the wM-Bus test vectors.
import { readFileSync } from 'node:fs'

export interface Vector {
  source: string
  driver: string
  id: string
  key: string | null
  default_key: string | null
  telegram: string
  prior_telegrams: string[]
  register: { field: string; value: number; unit: string } | null
  link: Record<string, unknown>
  expect?: 'ok' | 'wrong_key'
  scheme?: string
}

const DIR = new URL('../fixtures/wmbus/', import.meta.url)

export function loadVectors(name: 'visible.jsonl' | 'crypto-visible.jsonl'): Vector[] {
  const text = readFileSync(new URL(name, DIR), 'utf8')
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Vector)
}

/** Expected register value in our canonical unit (kwh, m3; hca unitless). */
export function expectedCanonical(reg: { value: number; unit: string }): {
  value: number
  unit: 'kwh' | 'm3' | null
} {
  switch (reg.unit) {
    case 'kwh':
      return { value: reg.value, unit: 'kwh' }
    case 'mwh':
      return { value: reg.value * 1000, unit: 'kwh' }
    case 'gj':
      return { value: reg.value / 0.0036, unit: 'kwh' }
    case 'm3':
      return { value: reg.value, unit: 'm3' }
    case 'l':
      return { value: reg.value / 1000, unit: 'm3' }
    default:
      return { value: reg.value, unit: null }
  }
}

export function close(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b))
}

// `{mapping}` or `{preset}` on an admin body: exactly one of them, a preset named by one of
// the known names. The preset's mapping is what gets compiled and stored.
import { validationError } from '../errors.js'
import { findPreset, PRESET_NAMES } from './presets.js'

/** The raw mapping definition the body asks for (compiled by the caller); 422 otherwise. */
export function mappingOrPreset(body: { mapping?: unknown; preset?: unknown }): unknown {
  const hasMapping = body.mapping !== undefined
  const hasPreset = body.preset !== undefined
  if (hasMapping && hasPreset)
    throw validationError({
      mapping: ['Give either mapping or preset, not both.'],
      preset: ['Give either mapping or preset, not both.'],
    })
  if (!hasPreset) {
    if (!hasMapping) throw validationError({ mapping: ['A mapping or a preset is required.'] })
    return body.mapping
  }
  const p = typeof body.preset === 'string' ? findPreset(body.preset) : undefined
  if (!p)
    throw validationError({
      preset: [`Unknown preset; allowed: ${PRESET_NAMES.join(', ')}.`],
    })
  return p.mapping
}

export { inspectTelegram, type TelegramInspection } from './inspect.js'
export {
  DecoderPool,
  type TelegramJob,
  type TelegramOutcome,
  type DecoderPoolOptions,
} from './pool.js'
export { validateLayout, type FrameLayout, type FrameOutcome } from './frame-layout.js'

// Per-token and per-IP rate limits count in fixed windows on the wall-clock minute
// (coord.ts windowStart). A test that sends a burst against a real clock and counts the
// 429s first waits out the last seconds of a minute, so the burst falls in one window.

/** Resolves at once, or after the next minute starts when fewer than `marginMs` are left. */
export async function awayFromMinuteEdge(marginMs = 10_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000)
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 50))
}

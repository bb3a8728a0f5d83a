// Preloaded (NODE_OPTIONS=--import) into a service process to give it a wall clock that is
// CLOCK_SKEW_MS ahead of the machine's: an instance whose clock is wrong, as happens when
// NTP is off on one host.
const skew = Number(process.env.CLOCK_SKEW_MS ?? 0)
const realNow = Date.now
Date.now = () => realNow() + skew

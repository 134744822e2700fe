// One clock for every span of the process. A span records performance.now() readings (ADR 0049);
// the SDK would turn each span's into wall-clock time through an offset of its own, read from
// Date.now() and performance.now() one after the other when the span object is made, so a
// process preempted between the two reads (8 ms at load 15 on two cores) shifts that span alone
// and a child can seem to start before its parent. Here one offset serves every span, read where
// the two clocks were read closest together, and read again each minute so that the wall clock's
// corrections (NTP) are followed.
import type { HrTime } from "@opentelemetry/api";

/** How often the offset between the performance and wall clocks is read again, in milliseconds. */
const REANCHOR_MS = 60_000;
/** Reads of the two clocks an anchor chooses from: the one with the least time between them. */
const ANCHOR_READS = 5;

/** Milliseconds to add to a performance.now() reading for wall-clock (epoch) milliseconds. */
function readOffset(): number {
  let best = { gap: Infinity, offset: 0 };
  for (let i = 0; i < ANCHOR_READS; i++) {
    const before = performance.now();
    const wall = Date.now();
    const after = performance.now();
    if (after - before < best.gap) best = { gap: after - before, offset: wall - (before + after) / 2 };
  }
  return best.offset;
}

let offset = readOffset();
let anchoredAt = performance.now();

/** `t` (a performance.now() reading, or a Date) as the [seconds, nanoseconds] wall-clock time the SDK takes as given. */
export function spanTime(t: Date | number): HrTime {
  let ms: number;
  if (t instanceof Date) ms = t.getTime();
  else {
    if (t - anchoredAt > REANCHOR_MS) {
      offset = readOffset();
      anchoredAt = performance.now();
    }
    ms = t + offset;
  }
  const seconds = Math.floor(ms / 1000);
  // Floor, not round: a time never reaches the next second's 1e9 ns, and order is kept.
  return [seconds, Math.floor((ms - seconds * 1000) * 1e6)];
}

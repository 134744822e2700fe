// The contract of a worker that gave up waiting for the tool-call gate (NATS down, no gate
// listening) before its iteration's deadline: exit code 75 and one stderr line saying for how
// long and why (docs/protocol.md). The worker runtime writes it; the engine reads it, so both
// drivers (the controller's pods, `gavel run`'s containers) report it the same way.

/** Exit code of a worker that could not reach the tool-call gate (EX_TEMPFAIL of sysexits.h). */
export const GATE_UNREACHABLE_EXIT = 75;

/** The `event` of the JSON log line that goes with exit code 75. */
export const GATE_UNREACHABLE_EVENT = "gate_unreachable";

/** How long the worker waited for the gate, and what it last saw. */
export interface GateUnreachable {
  /** Whole seconds the worker waited before it gave up. */
  seconds: number;
  /** What it last saw: "NATS at nats://...: connection refused", "no gate was listening", ... */
  detail: string;
}

/** The fields of the stderr line a worker writes before it exits 75. */
export function gateUnreachableFields(u: GateUnreachable): Record<string, unknown> {
  return { event: GATE_UNREACHABLE_EVENT, seconds: u.seconds, detail: u.detail };
}

/** The outcome's wording: the iteration's feedback, the Execution's message and its Events use it. */
export function describeGateUnreachable(u: GateUnreachable): string {
  return `the tool-call gate could not be reached for ${u.seconds} s (${u.detail}); the worker stopped waiting before its deadline, having run no further tool call (exit ${GATE_UNREACHABLE_EXIT}, not a failure of the agent's code)`;
}

/**
 * Whether a worker's run ended because the gate could not be reached: exit code 75 and, in
 * its stderr (or its stdout, where a driver merged the two), the line gateUnreachableFields
 * describes. Exit 75 alone is not enough: an agent's own program may use that code.
 */
export function gateUnreachableOf(exitCode: number, ...outputs: string[]): GateUnreachable | undefined {
  if (exitCode !== GATE_UNREACHABLE_EXIT) return undefined;
  for (const text of outputs) {
    const lines = text.split("\n");
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = (lines[i] as string).trim();
      if (!line.startsWith("{") || !line.includes(GATE_UNREACHABLE_EVENT)) continue;
      try {
        const o = JSON.parse(line) as { event?: unknown; seconds?: unknown; detail?: unknown };
        if (o.event !== GATE_UNREACHABLE_EVENT || typeof o.seconds !== "number" || !Number.isFinite(o.seconds)) continue;
        return {
          seconds: Math.max(0, Math.round(o.seconds)),
          detail: typeof o.detail === "string" && o.detail !== "" ? o.detail : "no detail",
        };
      } catch {
        continue;
      }
    }
  }
  return undefined;
}

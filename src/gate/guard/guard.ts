// The deterministic guard: the seven checks in Guardian's order, first denial wins. No model,
// no I/O: a pure function of the call and its context.
import type { GuardDecision } from "../../api/protocol.js";
import { adaptiveRules, capability, CallState, destructivePattern, hash, revocation, sequenceContract, signature, type Check, type GuardCall } from "./checks.js";
import type { GuardContext } from "./context.js";

/** Checks 1–6 in order; adaptive rules (7) run last because they can also flag. */
export const CHECKS: readonly Check[] = [revocation, hash, capability, destructivePattern, sequenceContract, signature];

/** Runs the guard over one call. */
export function runGuard(call: GuardCall, ctx: GuardContext): GuardDecision {
  const state = new CallState(call, ctx);
  for (const check of CHECKS) {
    const denial = check(state);
    if (denial !== undefined) return denial;
  }
  return adaptiveRules(state);
}

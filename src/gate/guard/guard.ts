// The deterministic guard: the seven checks in Guardian's order, first denial wins (a rule in
// warn or dryrun mode notes its would-be denial and lets the call go on). No model, no I/O: a
// pure function of the call and its context.
import type { GuardDecision } from "../../api/protocol.js";
import {
  adaptiveRules,
  capability,
  CallState,
  destructivePattern,
  hash,
  revocation,
  sequenceContract,
  signature,
  type Check,
  type GuardCall,
} from "./checks.js";
import type { GuardContext } from "./context.js";

/** Checks 1–6 in order; adaptive rules (7) run last because they can also flag. */
export const CHECKS: readonly Check[] = [revocation, hash, capability, destructivePattern, sequenceContract, signature];

/** Runs the guard over one call. */
export function runGuard(call: GuardCall, ctx: GuardContext): GuardDecision {
  const state = new CallState(call, ctx);
  let decision: GuardDecision | undefined;
  for (const check of CHECKS) {
    decision = check(state);
    if (decision !== undefined) break;
  }
  decision ??= adaptiveRules(state);
  // Threat classes the policy flags: the call goes on, flagged.
  if (state.flags !== undefined) decision.flags = [...state.flags, ...(decision.flags ?? [])];
  // What rules in warn or dryrun mode would have denied, up to the decision.
  if (state.warnings !== undefined) decision.warnings = state.warnings;
  if (state.dryrun !== undefined) decision.dryrun = state.dryrun;
  return decision;
}

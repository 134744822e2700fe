// The one rule every status condition of gavel follows (Kubernetes API conventions, as
// cert-manager's apiutil.SetCondition): a condition of a type is replaced where it stands,
// observedGeneration says which spec it speaks of, and lastTransitionTime moves only when
// the status (True/False/Unknown) changes, so "Age" in `kubectl describe` means something.
import type { Condition } from "./types.js";

/** What a writer says of a condition; setCondition adds the times and the generation. */
export type ConditionFacts = Pick<Condition, "type" | "status" | "reason" | "message">;

/** The condition of `type` in a status's conditions, if any; a malformed list (from the API server) has none. */
export function findCondition(conditions: unknown, type: string): Condition | undefined {
  if (!Array.isArray(conditions)) return undefined;
  return (conditions as unknown[]).find((c): c is Condition => typeof c === "object" && c !== null && (c as Condition).type === type);
}

/**
 * The conditions with `next` set: in place of the current one of its type (others kept in
 * order), else appended. Its lastTransitionTime is the current one's while the status does
 * not change, else `now`; observedGeneration is `generation` when known.
 */
export function setCondition(conditions: unknown, next: ConditionFacts, now: Date, generation?: number): Condition[] {
  const list = Array.isArray(conditions) ? (conditions as Condition[]) : [];
  const current = findCondition(list, next.type);
  const keepTime = current !== undefined && current.status === next.status && typeof current.lastTransitionTime === "string";
  const set: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime: keepTime ? current.lastTransitionTime : now.toISOString(),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  };
  return current === undefined ? [...list, set] : list.map((c) => (c === current ? set : c));
}

/** True when two conditions say the same thing: status, reason, message and generation (the time aside). */
export function sameCondition(a: Condition | undefined, b: Condition | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.observedGeneration === b.observedGeneration
  );
}

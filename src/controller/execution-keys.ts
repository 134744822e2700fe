// Which Execution keys a change wakes in the reconciler's queue, and how urgently: an
// Execution not started yet is queued first, so its worker's pod is made before the queue
// serves the wake-ups of runs already going (their pods' changes, their own status writes,
// their judges' ends). Without it a burst of new Executions waits behind every key queued
// before it (docs/scale.md: p99 created -> first pod 19-24 s at 500 with FIFO order).
import type * as k8s from "@kubernetes/client-node";
import type { Execution } from "../api/types.js";
import { isTerminal } from "../engine/outer-loop.js";
import { ownerKey } from "./execution-pods.js";
import { objectKey } from "./runtime/informer.js";
import { PRIORITY, type PrioritizedKey } from "./runtime/work-queue.js";

/**
 * An Execution's change wakes it and its parent (a judge child that changed, e.g. ended: the
 * parent goes on). It is queued at PRIORITY.first while no reconcile has started it (no
 * startTime, not ended): a new run or judge child, or one held before its start.
 */
export function executionKeys(ex: Execution): PrioritizedKey[] {
  const keys: PrioritizedKey[] = [];
  const own = objectKey(ex);
  const started = ex.status?.startTime !== undefined || isTerminal(ex.status?.phase);
  if (own !== undefined) keys.push({ key: own, priority: started ? PRIORITY.normal : PRIORITY.first });
  const parent = ownerKey(ex);
  if (parent !== undefined) keys.push({ key: parent, priority: PRIORITY.normal });
  return keys;
}

/** A pod's change wakes the Execution that owns it. */
export function podKeys(pod: k8s.V1Pod): string[] {
  const owner = ownerKey(pod);
  return owner === undefined ? [] : [owner];
}

// When the tool-call gate loses or regains NATS, every Execution that has not ended is
// reconciled again: its Guarded condition then says so (False, naming NATS) while its worker
// waits for the gate, and True again once it is back (docs/protocol.md, issue 28).
import type * as k8s from "@kubernetes/client-node";
import type { NamespaceFilter } from "./runtime/namespace-scope.js";
import { isTerminal } from "../engine/phases.js";
import { GavelResources } from "./gavel-resources.js";

/** Queues (`add`, keys namespace/name) every Execution in scope that has not ended; returns how many. */
export async function requeueUnfinished(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
  add: (key: string) => void,
  scope?: NamespaceFilter,
): Promise<number> {
  const unfinished = (await new GavelResources(kc).executions(namespace)).filter(
    (e) => !isTerminal(e.status?.phase) && (scope?.admits(e.metadata.namespace ?? "default") ?? true),
  );
  for (const e of unfinished) add(`${e.metadata.namespace ?? "default"}/${e.metadata.name}`);
  return unfinished.length;
}

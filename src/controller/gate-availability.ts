// When the tool-call gate loses or regains NATS, every Execution that has not ended is
// reconciled again: its Guarded condition then says so (False, naming NATS) while its worker
// waits for the gate, and True again once it is back (docs/protocol.md, issue 28).
import * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION, type Execution } from "../api/types.js";
import { isTerminal } from "../engine/phases.js";

/** Queues (`add`, keys namespace/name) every Execution in scope that has not ended; returns how many. */
export async function requeueUnfinished(kc: k8s.KubeConfig, namespace: string | undefined, add: (key: string) => void): Promise<number> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const list = (
    namespace === undefined
      ? await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: "executions" })
      : await api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions" })
  ) as { items: Execution[] };
  const unfinished = list.items.filter((e) => !isTerminal(e.status?.phase));
  for (const e of unfinished) add(`${e.metadata.namespace ?? "default"}/${e.metadata.name}`);
  return unfinished.length;
}

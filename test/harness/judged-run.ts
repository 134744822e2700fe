// A judged run written into a namespace of the real kube-apiserver as the controller writes it,
// for the tests that read one back (integration cli-inspect and web-view): an Execution, its
// status, and a semantic judge's child Execution owned by it. Nothing here runs a pod.
import * as k8s from "@kubernetes/client-node";
import type { Execution, ExecutionStatus, JsonValue } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";

/** Writes Executions and their statuses in one namespace. */
export interface RunWriter {
  /** Creates an Execution of `agent` with `input`; returns it as the API server stored it (with its uid). */
  createRun(name: string, agent: string, input: JsonValue): Promise<Execution>;
  /** Replaces the Execution's status, as the controller's status writes do. */
  putStatus(name: string, status: ExecutionStatus): Promise<void>;
  /**
   * Creates the child the reconciler makes for validator `validatorIndex` of `run`'s iteration
   * `iteration` (named `<run>-i<iteration>-v<index>-<judge>`, labelled and owned by the run).
   */
  createJudgeChild(run: Execution, c: { judge: string; iteration: number; validatorIndex: number; input: JsonValue }): Promise<Execution>;
}

/** A RunWriter for `namespace`, through `kc`'s credentials. */
export function runWriter(kc: k8s.KubeConfig, namespace: string): RunWriter {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const where = { group: GROUP, version: VERSION, namespace, plural: "executions" };
  const get = async (name: string): Promise<Execution> => (await api.getNamespacedCustomObject({ ...where, name })) as Execution;
  const create = async (body: Execution): Promise<Execution> => {
    await api.createNamespacedCustomObject({ ...where, body });
    return get(body.metadata.name ?? "");
  };
  return {
    createRun: (name, agent, input) =>
      create({ apiVersion: "100monkeys.ai/v1", kind: "Execution", metadata: { name }, spec: { agentRef: { name: agent }, input } }),
    async putStatus(name, status) {
      const current = await get(name);
      await api.replaceNamespacedCustomObjectStatus({ ...where, name, body: { ...current, status } });
    },
    createJudgeChild(run, c) {
      const parent = run.metadata.name ?? "";
      const uid = run.metadata.uid ?? "";
      return create({
        apiVersion: "100monkeys.ai/v1",
        kind: "Execution",
        metadata: {
          name: `${parent}-i${c.iteration}-v${c.validatorIndex}-${c.judge}`,
          labels: { "gavel.dev/parent": parent, "gavel.dev/role": "judge" },
          ownerReferences: [{ apiVersion: "100monkeys.ai/v1", kind: "Execution", name: parent, uid, controller: true }],
        },
        spec: {
          agentRef: { name: c.judge },
          input: c.input,
          parent: { name: parent, uid, purpose: "validation", iteration: c.iteration, validatorIndex: c.validatorIndex, depth: 1 },
          timeoutSeconds: 60,
        },
      });
    },
  };
}

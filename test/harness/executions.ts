// What the e2e tests do with Executions in their own namespace of the single-node cluster:
// apply manifests, read Executions back, wait for a final phase, find an Execution's pods and
// the node directory of its dynamically provisioned workspace.
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import type { Execution, ToolCallEntry } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { eventually, type Cluster } from "./cluster.js";
import { CSI_DATA_DIR, CSI_DRIVER } from "./paths.js";

/** A tool call as the status shows it, in a form that compares well: step, tool, outcome, check, judged. */
export const callSummary = (c: ToolCallEntry) => [
  c.step,
  c.tool,
  c.allowed ? "allowed" : `blocked by ${c.blockedBy}`,
  c.check ?? "",
  (c.judges ?? []).length,
];

export const FINAL_PHASES = ["Succeeded", "Failed", "Cancelled", "TimedOut"];

export interface Executions {
  namespace: string;
  /**
   * kubectl apply -f - in the namespace; throws with kubectl's stderr. `validate: "warn"` is how
   * the reference's judge manifests apply verbatim (their metadata.version; docs/api.md).
   */
  apply(yaml: string, opts?: { validate?: "warn" }): Promise<void>;
  get(name: string): Promise<Execution | undefined>;
  /** The child Executions of `parent` (spec.parent), by name. */
  childrenOf(parent: string): Promise<Execution[]>;
  /** Waits for a final phase; the error carries `diagnostics()` (e.g. the controller's log). */
  final(name: string, timeoutMs?: number): Promise<Execution>;
  /** Pods owned by the Execution or by its judge children. */
  podsOf(execution: string): Promise<string[]>;
  /** Waits until none of the Execution's pods is left. */
  noPodsOf(execution: string, timeoutMs?: number): Promise<void>;
  /** Waits until none of the Execution's pods runs or waits to run (ended ones are kept for the controller's pod retention). */
  podsEnded(execution: string, timeoutMs?: number): Promise<void>;
  /** The node directory behind the Execution's claim for `volume` (local-path-provisioner's hostPath, or the test CSI driver's volume). */
  workspace(execution: string, volume?: string): Promise<string>;
}

export function executionsIn(
  cluster: Cluster,
  namespace: string,
  diagnostics: () => Promise<string> = () => Promise.resolve(""),
): Executions {
  const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
  const api = cluster.kc.makeApiClient(k8s.CustomObjectsApi);
  const get = async (name: string): Promise<Execution | undefined> => {
    try {
      return (await api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions", name })) as Execution;
    } catch {
      return undefined;
    }
  };
  const podObjectsOf = async (execution: string): Promise<k8s.V1Pod[]> => {
    const list = await core.listNamespacedPod({ namespace });
    return list.items.filter((p) =>
      (p.metadata?.ownerReferences ?? []).some(
        (o) => o.kind === "Execution" && (o.name === execution || o.name.startsWith(`${execution}-i`)),
      ),
    );
  };
  const podsOf = async (execution: string): Promise<string[]> => (await podObjectsOf(execution)).map((p) => p.metadata?.name ?? "");
  return {
    namespace,
    get,
    podsOf,
    async childrenOf(parent) {
      const list = (await api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions" })) as {
        items: Execution[];
      };
      return list.items.filter((e) => e.spec.parent?.name === parent).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    },
    async apply(yaml, opts = {}) {
      const validate = opts.validate !== undefined ? [`--validate=${opts.validate}`] : [];
      const r = await cluster.kubectl(["apply", ...validate, "-n", namespace, "-f", "-"], { stdin: yaml });
      if (r.code !== 0) throw new Error(`kubectl apply failed: ${r.stderr}`);
    },
    async final(name, timeoutMs = 240_000) {
      return eventually(
        async () => {
          const ex = await get(name);
          return ex?.status?.phase !== undefined && FINAL_PHASES.includes(ex.status.phase) ? ex : undefined;
        },
        timeoutMs,
        `Execution ${name} to finish`,
      ).catch(async (err: unknown) => {
        throw new Error(`${(err as Error).message}\n${(await diagnostics()).slice(-4000)}`);
      });
    },
    async noPodsOf(execution, timeoutMs = 30_000) {
      await eventually(
        async () => ((await podsOf(execution)).length === 0 ? true : undefined),
        timeoutMs,
        `${execution}'s pods to be gone`,
      );
    },
    async podsEnded(execution, timeoutMs = 30_000) {
      const ended = (p: k8s.V1Pod) => p.status?.phase === "Succeeded" || p.status?.phase === "Failed";
      await eventually(
        async () => ((await podObjectsOf(execution)).every(ended) ? true : undefined),
        timeoutMs,
        `${execution}'s pods to have ended`,
      );
    },
    async workspace(execution, volume = "workspace") {
      const claim = await core.readNamespacedPersistentVolumeClaim({ name: `${execution}-${volume}`, namespace });
      const pv = claim.spec?.volumeName;
      if (pv === undefined || pv === "") throw new Error(`claim ${execution}-${volume} is not bound`);
      const spec = (await core.readPersistentVolume({ name: pv })).spec;
      // gavel's test CSI driver keeps a volume in a directory named by its handle.
      if (spec?.csi?.driver === CSI_DRIVER) return join(CSI_DATA_DIR, "volumes", spec.csi.volumeHandle);
      const path = spec?.hostPath?.path;
      if (path === undefined) throw new Error(`volume ${pv} of ${execution}-${volume} has no hostPath and is not of ${CSI_DRIVER}`);
      return path;
    },
  };
}

/**
 * The .creds of an Execution's worker credential, from the Secret the controller made for it
 * (named after the Execution and its uid; found by its labels); undefined until it exists.
 */
export async function workerCredentials(core: k8s.CoreV1Api, namespace: string, execution: string): Promise<Buffer | undefined> {
  const list = await core.listNamespacedSecret({ namespace, labelSelector: `gavel.dev/execution=${execution},gavel.dev/role=worker` });
  const data = list.items[0]?.data?.["nats.creds"];
  return data === undefined ? undefined : Buffer.from(data, "base64");
}

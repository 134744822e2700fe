// A small typed client for gavel's own custom resources (Executions, Agents, GuardPolicies)
// as the controllers and the gate use them: read (undefined when absent), list, write a
// status, create a judge child. The one place that turns CustomObjectsApi's untyped objects
// into gavel's types, so no other file casts what the API server sent.
import * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION, type Agent, type Execution, type ExecutionStatus, type GuardPolicy } from "../api/types.js";
import { ignoreNotFound, TransientError } from "../errors.js";
import { createJudgeChild } from "./stored-parts.js";

/** gavel's resources by plural, and what each is. */
interface Kinds {
  executions: Execution;
  agents: Agent;
  guardpolicies: GuardPolicy;
}

const KIND: { [P in keyof Kinds]: Kinds[P]["kind"] } = { executions: "Execution", agents: "Agent", guardpolicies: "GuardPolicy" };

/** Executions, Agents and GuardPolicies on one API server. */
export class GavelResources {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;

  constructor(kc: k8s.KubeConfig) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  /** The Execution as the API server has it now (not a cache); undefined when it does not exist. */
  execution(namespace: string, name: string): Promise<Execution | undefined> {
    return this.get("executions", namespace, name);
  }

  /** The Agent as stored (no defaults applied); undefined when it does not exist. */
  agent(namespace: string, name: string): Promise<Agent | undefined> {
    return this.get("agents", namespace, name);
  }

  /** The Executions of a namespace, or of all namespaces when it is undefined. */
  async executions(namespace?: string): Promise<Execution[]> {
    const params = { group: GROUP, version: VERSION, plural: "executions" };
    const got: unknown =
      namespace === undefined
        ? await this.custom.listClusterCustomObject(params)
        : await this.custom.listNamespacedCustomObject({ ...params, namespace });
    const items = (got as { items?: unknown } | undefined)?.items;
    if (!Array.isArray(items))
      throw new TransientError(
        `listing executions${namespace === undefined ? "" : ` in namespace "${namespace}"`}: the API server answered without items`,
      );
    return items.map((o) => typed("executions", o));
  }

  /**
   * Replaces an Execution's status (PUT on the status subresource with the resourceVersion
   * read, so a stale write is a 409 the caller retries); the Execution as written, or
   * undefined when it is gone.
   */
  async replaceStatus(ex: Execution, status: ExecutionStatus): Promise<Execution | undefined> {
    const namespace = ex.metadata.namespace ?? "default";
    const body = { ...ex, status };
    const got: unknown = await this.custom
      .replaceNamespacedCustomObjectStatus({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "executions",
        name: ex.metadata.name,
        body,
      })
      .catch(ignoreNotFound);
    return got === undefined ? undefined : typed("executions", got);
  }

  /**
   * Merge-patches the status of an Agent or a GuardPolicy (a metadata.resourceVersion in the
   * patch makes a write from a stale cache a 409); false when the object is gone.
   */
  async patchStatus(plural: "agents" | "guardpolicies", namespace: string, name: string, patch: Record<string, unknown>): Promise<boolean> {
    const got: unknown = await this.custom
      .patchNamespacedCustomObjectStatus(
        { group: GROUP, version: VERSION, namespace, plural, name, body: patch },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      )
      .catch(ignoreNotFound);
    return got !== undefined;
  }

  /** Creates a judge child (its payload parts first); false when it existed already. */
  createJudgeChild(child: Execution): Promise<boolean> {
    return createJudgeChild({ core: this.core, custom: this.custom }, child);
  }

  private async get<P extends keyof Kinds>(plural: P, namespace: string, name: string): Promise<Kinds[P] | undefined> {
    const got: unknown = await this.custom
      .getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name })
      .catch(ignoreNotFound);
    return got === undefined ? undefined : typed(plural, got);
  }
}

/**
 * An object the API server sent as one of gavel's kinds. The server validated it against the
 * CRD's schema; this checks only what says it is that kind (an object with metadata.name, of
 * that kind when it names one: list items do not), so a wrong route fails loudly here.
 */
function typed<P extends keyof Kinds>(plural: P, obj: unknown): Kinds[P] {
  const o = obj as { kind?: unknown; metadata?: { name?: unknown } } | null;
  if (typeof o !== "object" || o === null || typeof o.metadata?.name !== "string" || (o.kind !== undefined && o.kind !== KIND[plural])) {
    throw new TransientError(
      `the API server sent ${plural} an object that is not ${KIND[plural]}: ${JSON.stringify(obj)?.slice(0, 200) ?? String(obj)}`,
    );
  }
  return obj as Kinds[P];
}

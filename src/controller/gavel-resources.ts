// A small typed client for gavel's own custom resources as the Execution reconciler uses
// them: read an Execution or an Agent (undefined when absent), replace an Execution's status,
// create a judge child. One place turns CustomObjectsApi's untyped objects into gavel's types.
import * as k8s from "@kubernetes/client-node";
import { GROUP, VERSION, type Agent, type Execution, type ExecutionStatus } from "../api/types.js";
import { ignoreNotFound } from "../errors.js";
import { createJudgeChild } from "./stored-parts.js";

/** Executions and Agents on one API server. */
export class GavelResources {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;

  constructor(kc: k8s.KubeConfig) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  /** The Execution as the API server has it now (not a cache); undefined when it does not exist. */
  async execution(namespace: string, name: string): Promise<Execution | undefined> {
    return (await this.custom
      .getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "executions", name })
      .catch(ignoreNotFound)) as Execution | undefined;
  }

  /** The Agent as stored (no defaults applied); undefined when it does not exist. */
  async agent(namespace: string, name: string): Promise<Agent | undefined> {
    return (await this.custom
      .getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: "agents", name })
      .catch(ignoreNotFound)) as Agent | undefined;
  }

  /**
   * Replaces an Execution's status (PUT on the status subresource with the resourceVersion
   * read, so a stale write is a 409 the caller retries); the Execution as written, or
   * undefined when it is gone.
   */
  async replaceStatus(ex: Execution, status: ExecutionStatus): Promise<Execution | undefined> {
    const namespace = ex.metadata.namespace ?? "default";
    const body = { ...ex, status };
    return (await this.custom
      .replaceNamespacedCustomObjectStatus({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "executions",
        name: ex.metadata.name,
        body,
      })
      .catch(ignoreNotFound)) as Execution | undefined;
  }

  /** Creates a judge child (its payload parts first); false when it existed already. */
  createJudgeChild(child: Execution): Promise<boolean> {
    return createJudgeChild({ core: this.core, custom: this.custom }, child);
  }
}

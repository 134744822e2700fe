// The set-up most e2e files share: the cluster, the chart's controller Ready, a namespace of the
// file's own for its Executions (whose failures carry the controller's log tail), and the
// README's way of running an example (its files and the shipped rule-judge applied verbatim).
import { join } from "node:path";
import { useCluster, type Cluster } from "./cluster.js";
import { executionsIn, type Executions } from "./executions.js";
import { ChartController } from "./gavel-chart.js";
import { REPO_DIR } from "./paths.js";

export interface ChartRuns {
  cluster: Cluster;
  controller: ChartController;
  runs: Executions;
}

export interface ChartRunsOptions {
  /** Enforce Pod Security `restricted` in the namespace, as the README's quick starts run. */
  restricted?: boolean;
  /** How much of the controller's log a failure shows (characters from its end; all by default). */
  logTail?: number;
  /** More diagnostics after the controller's log (e.g. a CLI's output). */
  diagnostics?: () => string;
}

/** The cluster, the chart's controller once Ready, and the Executions of a new namespace named after prefix. */
export async function chartRuns(prefix: string, options: ChartRunsOptions = {}): Promise<ChartRuns> {
  const cluster = await useCluster();
  const controller = new ChartController(cluster);
  await controller.ready();
  const ns = await cluster.createNamespace(prefix);
  if (options.restricted === true) {
    await cluster.kubectlOk(["label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted", "--overwrite"]);
  }
  const runs = executionsIn(cluster, ns, async () => {
    const log = await controller.log();
    const shown = options.logTail === undefined ? log : log.slice(-options.logTail);
    return `controller log:\n${shown}${options.diagnostics === undefined ? "" : `\n${options.diagnostics()}`}`;
  });
  return { cluster, controller, runs };
}

/** The file of examples/NAME/. */
export const exampleFile = (name: string, file: string): string => join(REPO_DIR, "examples", name, file);

/** As the README's cluster quick start runs examples/NAME: its agent.yaml and policy.yaml with the shipped rule-judge, then its execution.yaml. */
export async function applyExample(cluster: Cluster, namespace: string, name: string): Promise<void> {
  const judge = join(REPO_DIR, "judges", "rule-judge", "agent.yaml");
  await cluster.kubectlOk([
    "apply",
    "-n",
    namespace,
    "-f",
    exampleFile(name, "agent.yaml"),
    "-f",
    exampleFile(name, "policy.yaml"),
    "-f",
    judge,
  ]);
  await cluster.kubectlOk(["apply", "-n", namespace, "-f", exampleFile(name, "execution.yaml")]);
}

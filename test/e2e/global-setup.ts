// Once per e2e run, before any test file: the single-node cluster up (add-ons ready) and gavel
// installed on the cluster from the working tree's chart with its defaults, as a user installs
// it: the chart's own NATS (StatefulSet, operator mode) and the controller, both Ready pods.
// Test files share them (test/harness/gavel-chart.ts) and skip bringing the cluster up.
import { useCluster } from "../harness/cluster.js";
import { installChart } from "../harness/gavel-chart.js";

export default async function setup(): Promise<void> {
  const t0 = Date.now();
  const cluster = await useCluster();
  // Read by useCluster in the test files (their processes inherit this environment).
  process.env.GAVEL_CLUSTER_READY = "1";
  const t1 = Date.now();
  await installChart(cluster);
  console.log(`e2e fixture: cluster up in ${(t1 - t0) / 1000}s, chart installed and controller Ready in ${(Date.now() - t1) / 1000}s`);
}

// Once per e2e run, before any test file: the single-node cluster up (add-ons ready), a NATS
// server with JetStream the pods reach (on the node's address: the chart's nats.url), and gavel
// installed on the cluster from the working tree's chart, its controller a Ready pod. Test
// files share that controller (test/harness/gavel-chart.ts) and skip bringing the cluster up.
import { useCluster } from "../harness/cluster.js";
import { installChart } from "../harness/gavel-chart.js";
import { startNatsForPods } from "../harness/nats.js";

export default async function setup(): Promise<() => Promise<void>> {
  const t0 = Date.now();
  const cluster = await useCluster();
  const nats = await startNatsForPods();
  // Read by installChart here and in the test files (their processes inherit this environment).
  process.env.GAVEL_E2E_NATS_URL = nats.url;
  process.env.GAVEL_CLUSTER_READY = "1";
  const t1 = Date.now();
  await installChart(cluster);
  console.log(`e2e fixture: cluster up in ${(t1 - t0) / 1000}s, chart installed and controller Ready in ${(Date.now() - t1) / 1000}s`);
  return () => nats.stop();
}

// Once per e2e run, before any test file: the single-node cluster up (add-ons ready) and gavel
// installed on the cluster from the working tree's chart with its defaults, as a user installs
// it: the chart's own NATS (StatefulSet, operator mode) and the controller, both Ready pods.
// Test files share them (test/harness/gavel-chart.ts) and skip bringing the cluster up. A
// Jaeger on the node's address receives the controller's traces (chart value
// tracing.otlpEndpoint, set by every install of the fixture) for the whole run, and a webhook
// receiver there its approval announcements, signed (approvals.webhookUrl and webhookSecret,
// test/harness/webhook-receiver.ts).
// At the end, the namespaces the files made are deleted (some files leave theirs, e.g. judge-drivers).
import { join } from "node:path";
import { deleteTestNamespaces, useCluster } from "../harness/cluster.js";
import { runOk } from "../harness/exec.js";
import { installChart, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { E2E_JAEGER_QUERY_ENV, E2E_OTLP_ENDPOINT_ENV, startJaeger } from "../harness/jaeger.js";
import { HARNESS_DIR, NODE_IP } from "../harness/paths.js";
import {
  E2E_APPROVAL_WEBHOOK_ENV,
  E2E_APPROVAL_WEBHOOK_SECRET_ENV,
  startWebhookReceiver,
  writeWebhookSecret,
} from "../harness/webhook-receiver.js";

export default async function setup(): Promise<() => Promise<void>> {
  const t0 = Date.now();
  const cluster = await useCluster();
  // Read by useCluster in the test files (their processes inherit this environment).
  process.env.GAVEL_CLUSTER_READY = "1";
  // Both e2e projects run this setup in the one vitest process: the first starts Jaeger, the second finds it.
  let stop = (): Promise<void> => Promise.resolve();
  if (process.env[E2E_OTLP_ENDPOINT_ENV] === undefined) {
    await runOk(join(HARNESS_DIR, "build-jaeger.sh"), []);
    const jaeger = await startJaeger(NODE_IP);
    process.env[E2E_OTLP_ENDPOINT_ENV] = jaeger.otlpEndpoint;
    process.env[E2E_JAEGER_QUERY_ENV] = jaeger.queryUrl;
    const receiver = await startWebhookReceiver(NODE_IP);
    process.env[E2E_APPROVAL_WEBHOOK_ENV] = receiver.base;
    process.env[E2E_APPROVAL_WEBHOOK_SECRET_ENV] = await writeWebhookSecret(cluster, RELEASE_NAMESPACE);
    stop = async () => {
      await jaeger.stop();
      await receiver.stop();
    };
  }
  const t1 = Date.now();
  await installChart(cluster);
  console.log(
    `e2e fixture: cluster up in ${(t1 - t0) / 1000}s, chart installed and controller Ready in ${(Date.now() - t1) / 1000}s, traces to Jaeger at ${process.env[E2E_OTLP_ENDPOINT_ENV] ?? ""}`,
  );
  // Both projects' teardowns run after every file of the run: the second finds nothing left.
  return async () => {
    try {
      const deleted = await deleteTestNamespaces(cluster);
      if (deleted > 0) console.log(`e2e teardown: ${deleted} test namespace(s) deleted`);
    } catch (err) {
      console.warn(`e2e teardown: test namespaces not deleted: ${String(err)}`);
    }
    await stop();
  };
}

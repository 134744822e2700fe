// The single-node cluster is a real cluster for the pods on it: from inside a pod, the API
// server answers at kubernetes.default.svc (kube-proxy, the apiserver on the node's address)
// with the pod's ServiceAccount token, and a Service's name resolves (CoreDNS) and reaches its
// pod (kube-proxy) — what the chart's controller pod needs, checked without it.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, useCluster, type Cluster } from "../harness/cluster.js";
import { BASE_IMAGE } from "../harness/paths.js";

// A pod's view: DNS names, the API server with the mounted token and CA, a Service by short and full name.
const PROBE = `
const dns = require("dns").promises, fs = require("fs"), https = require("https"), http = require("http");
const get = (mod, url, opts = {}) => new Promise((resolve, reject) => mod.get(url, { timeout: 5000, ...opts }, (res) => {
  let body = ""; res.on("data", (d) => (body += d)); res.on("end", () => resolve({ status: res.statusCode, body }));
}).on("error", reject));
(async () => {
  const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
  const out = {};
  out.apiAddress = (await dns.lookup("kubernetes.default.svc")).address;
  const api = await get(https, "https://kubernetes.default.svc/version", {
    ca: fs.readFileSync(sa + "/ca.crt"), headers: { Authorization: "Bearer " + fs.readFileSync(sa + "/token", "utf8") } });
  out.apiStatus = api.status; out.gitVersion = JSON.parse(api.body).gitVersion;
  out.echoAddress = (await dns.lookup("echo")).address;
  out.echoFullAddress = (await dns.lookup("echo." + process.env.NS + ".svc.cluster.local")).address;
  // kube-proxy programs a new Service's endpoint a moment after the EndpointSlice lists it;
  // until then the ClusterIP refuses connections (its REJECT rule for no endpoints).
  for (let i = 0; ; i++) {
    try { out.echo = (await get(http, "http://echo:8080/")).body; break; }
    catch (e) { if (e.code !== "ECONNREFUSED" || i >= 40) throw e; out.refusedBeforeReady = i + 1; await new Promise((r) => setTimeout(r, 250)); }
  }
  try { await dns.lookup("no-such-service"); out.missing = "resolved"; } catch (e) { out.missing = e.code; }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e.stack); process.exit(1); });
`;

describe("single-node cluster: Services, DNS and the API server from a pod", () => {
  let cluster: Cluster;
  let core: k8s.CoreV1Api;
  let ns: string;

  beforeAll(async () => {
    cluster = await useCluster();
    core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    ns = await cluster.createNamespace("e2e-net");
  });
  afterAll(async () => {
    await cluster?.deleteNamespace(ns);
  });

  it("Given a Service in front of a pod, a second pod resolves both it and kubernetes.default.svc and reaches each", async () => {
    // Given an echo server behind a Service named echo
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: "echo", labels: { app: "echo" } },
        spec: {
          containers: [
            {
              name: "main",
              image: BASE_IMAGE,
              imagePullPolicy: "Never",
              command: [
                "node",
                "-e",
                "require('http').createServer((q, s) => s.end('echo from ' + require('os').hostname())).listen(8080)",
              ],
              readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
            },
          ],
        },
      },
    });
    const svc = await core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: "echo" }, spec: { selector: { app: "echo" }, ports: [{ port: 8080, targetPort: 8080 }] } },
    });
    await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: "echo", namespace: ns });
        return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? true : undefined;
      },
      60_000,
      "the echo pod to be Ready",
    );
    const discovery = cluster.kc.makeApiClient(k8s.DiscoveryV1Api);
    await eventually(
      async () => {
        const slices = await discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: "kubernetes.io/service-name=echo" });
        return slices.items.some((sl) => (sl.endpoints ?? []).some((e) => e.conditions?.ready === true)) ? true : undefined;
      },
      60_000,
      "the echo Service's EndpointSlice to list its pod",
    );

    // When a pod looks them up and calls them
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: "probe" },
        spec: {
          restartPolicy: "Never",
          containers: [
            { name: "main", image: BASE_IMAGE, imagePullPolicy: "Never", command: ["node", "-e", PROBE], env: [{ name: "NS", value: ns }] },
          ],
        },
      },
    });
    const done = await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: "probe", namespace: ns });
        return pod.status?.containerStatuses?.[0]?.state?.terminated ?? undefined;
      },
      90_000,
      "the probe pod to finish",
    );
    const log = await core.readNamespacedPodLog({ name: "probe", namespace: ns });
    expect(done.exitCode, log).toBe(0);

    // Then the API server answered through the kubernetes Service, and the Service name led to the echo pod
    const out = JSON.parse(log) as Record<string, unknown>;
    console.log(`probe: ${log.trim()}`);
    expect(out).toMatchObject({
      apiAddress: "10.0.0.1",
      apiStatus: 200,
      echoAddress: svc.spec?.clusterIP,
      echoFullAddress: svc.spec?.clusterIP,
      echo: "echo from echo",
      // A name in no zone: the cluster's DNS has no upstream to forward to (ADR 0009), so SERVFAIL
      missing: "EAI_AGAIN",
    });
    expect(out.gitVersion).toMatch(/^v1\.31\./);
  });
});

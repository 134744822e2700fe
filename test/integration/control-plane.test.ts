// The real control plane (etcd + kube-apiserver with TLS and RBAC) with gavel's CRDs:
// create, read, watch and delete an Execution through @kubernetes/client-node.
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { run } from "../harness/exec.js";

const group = "100monkeys.ai";
const version = "v1";
const plural = "executions";

describe("control plane (real etcd + kube-apiserver)", () => {
  let cp: ControlPlane;
  let api: k8s.CustomObjectsApi;
  let ns: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
    ns = await cp.createNamespace("cp");
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("serves TLS with client-certificate authentication and RBAC", async () => {
    const cluster = cp.kc.getCurrentCluster();
    const ca = cluster?.caFile ?? "";
    // No client certificate: the request is anonymous and RBAC refuses it.
    const anon = await run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca, `${cluster?.server}/api/v1/namespaces`]);
    expect(["401", "403"]).toContain(anon.stdout);
    // The admin client certificate (group system:masters) is allowed.
    const who = await cp.kubectl(["auth", "can-i", "create", "executions.100monkeys.ai", "-n", ns]);
    expect(who.stdout.trim()).toBe("yes");
    // A service account with no role bound is refused by RBAC.
    const sa = await cp.kubectl(["auth", "can-i", "list", "pods", "-n", ns, `--as=system:serviceaccount:${ns}:nobody`]);
    expect(sa.stdout.trim()).toBe("no");
  });

  it("creates, reads, watches and deletes an Execution", async () => {
    const events: { type: string; name: string; phase?: string }[] = [];
    const watchErrors: unknown[] = [];
    const watch = new k8s.Watch(cp.kc);
    const req = await watch.watch(
      `/apis/${group}/${version}/namespaces/${ns}/${plural}`,
      {},
      (type: string, obj: { metadata: { name: string }; status?: { phase?: string } }) =>
        events.push({ type, name: obj.metadata.name, phase: obj.status?.phase }),
      (err: unknown) => {
        if (err) watchErrors.push(err);
      },
    );
    try {
      const body = {
        apiVersion: `${group}/${version}`,
        kind: "Execution",
        metadata: { name: "run-1" },
        spec: { agentRef: { name: "summarizer" }, input: { topic: "gavel" } },
      };
      const created = (await api.createNamespacedCustomObject({ group, version, namespace: ns, plural, body })) as {
        metadata: { uid: string };
      };
      expect(created.metadata.uid).toMatch(/[0-9a-f-]{36}/);

      const read = (await api.getNamespacedCustomObject({ group, version, namespace: ns, plural, name: "run-1" })) as {
        spec: { agentRef: { name: string }; input: unknown };
      };
      expect(read.spec.agentRef.name).toBe("summarizer");
      expect(read.spec.input).toEqual({ topic: "gavel" });

      // Status is a subresource: a status write through it is seen by the watch.
      await api.patchNamespacedCustomObjectStatus(
        { group, version, namespace: ns, plural, name: "run-1", body: { status: { phase: "Running", iteration: 1 } } },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
      );
      await api.deleteNamespacedCustomObject({ group, version, namespace: ns, plural, name: "run-1" });

      const deadline = Date.now() + 10_000;
      while (!events.some((e) => e.type === "DELETED") && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(watchErrors).toEqual([]);
      expect(events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
      expect(events[1]?.phase).toBe("Running");
      await expect(api.getNamespacedCustomObject({ group, version, namespace: ns, plural, name: "run-1" })).rejects.toMatchObject({
        code: 404,
      });
    } finally {
      req.abort();
    }
  });
});

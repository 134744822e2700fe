// A read-only user for the inspection tests: a ServiceAccount allowed get, list and watch on
// gavel's kinds and the core objects `gavel logs` and `describe` read, and a kubeconfig with
// its token, so a command that tried to write would be refused by the real API server.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { eventually } from "./eventually.js";
import type { ControlPlane } from "./control-plane.js";

const VIEWER = `apiVersion: v1
kind: ServiceAccount
metadata: {name: viewer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gavel-viewer}
rules:
  - {apiGroups: ["100monkeys.ai"], resources: [executions, agents, guardpolicies], verbs: [get, list, watch]}
  - {apiGroups: [""], resources: [pods, pods/log, configmaps, events], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gavel-viewer}
subjects: [{kind: ServiceAccount, name: viewer}]
`;

/** Creates the viewer in `namespace` and writes its kubeconfig (context namespace `namespace`) into `dir`; returns the file. */
export async function viewerKubeconfig(cp: ControlPlane, namespace: string, dir: string): Promise<string> {
  const rbac = await cp.kubectl(["apply", "-n", namespace, "-f", "-"], { stdin: VIEWER });
  if (rbac.code !== 0) throw new Error(`creating the viewer: ${rbac.stderr}`);
  const core = cp.kc.makeApiClient(k8s.CoreV1Api);
  const token = await eventually(
    async () =>
      (
        await core.createNamespacedServiceAccountToken({
          name: "viewer",
          namespace,
          body: { spec: { audiences: [], expirationSeconds: 3600 } },
        })
      ).status?.token,
    20_000,
    "a viewer token",
  );
  const cluster = cp.kc.getCurrentCluster();
  const viewer = new k8s.KubeConfig();
  viewer.loadFromOptions({
    clusters: [{ name: "test", server: cluster?.server ?? "", caData: cluster?.caData, caFile: cluster?.caFile, skipTLSVerify: false }],
    users: [{ name: "viewer", token }],
    contexts: [{ name: "viewer", cluster: "test", user: "viewer", namespace }],
    currentContext: "viewer",
  });
  const file = join(dir, "viewer.kubeconfig");
  await writeFile(file, viewer.exportConfig(), { mode: 0o600 });
  return file;
}

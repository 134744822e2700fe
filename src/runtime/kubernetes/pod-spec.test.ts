// The pod PodWorkloads creates: names, hardening, mounts, limits, validation.
import { describe, expect, it } from "vitest";
import type { WorkloadSpec } from "../workload.js";
import { LABELS, NOBODY, denyAllNetworkPolicy, podManifest, podName, resourcesFor, specProblem, stuckReason, userFor } from "./pod-spec.js";
import { LAUNCHER_DIR, LAUNCHER_PATH, LOG_STREAMS_ANNOTATION, launcherConfigMap } from "./log-streams.js";

const judge: WorkloadSpec = {
  name: "exec-1-i2-judge-tests",
  image: "gavel/base:bookworm-node20",
  command: ["node", "judge.js"],
  env: { MODE: "strict" },
  mounts: [{ name: "workspace", source: "ws-claim", mountPath: "/workspace", readOnly: true }],
  network: "none",
  timeoutSeconds: 90.5,
  resources: { memoryBytes: 256 * 1024 * 1024, nanoCpus: 500_000_000 },
  labels: { "gavel.dev/role": "judge" },
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe("podName", () => {
  it("keeps a DNS-safe spec name readable and adds the instance", () => {
    expect(podName("exec-1-i2", "abcd1234")).toBe("gavel-exec-1-i2-abcd1234");
  });

  it("cleans unsafe names, keeps them within 63 chars, and keeps distinct names distinct", () => {
    const a = podName("My_Exec.Name/with SPACES", "abcd1234");
    const b = podName("my-exec-name-with-spaces", "abcd1234");
    expect(a).toMatch(DNS_LABEL);
    expect(a).not.toBe(b);
    const long = podName("x".repeat(300), "abcd1234");
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).toMatch(DNS_LABEL);
    expect(podName("x".repeat(300), "abcd1234")).toBe(long);
    expect(podName("y".repeat(300), "abcd1234")).not.toBe(long);
    expect(podName("---", "abcd1234")).toMatch(/^gavel-workload-[0-9a-f]{6}-abcd1234$/);
  });
});

describe("podManifest", () => {
  const name = podName(judge.name, "abcd1234");
  const pod = podManifest({ spec: judge, name, instance: "abcd1234", user: userFor(judge.mounts), imagePullPolicy: "Never" });
  const spec = pod.spec!;
  const main = spec.containers[0]!;

  it("gives the Agent's variables (values, Secret and ConfigMap keys, whole Secrets) before gavel's, which win on a clash", () => {
    const withAgentEnv: WorkloadSpec = {
      ...judge,
      env: { GAVEL_EXECUTION: "exec-1", MODE: "strict" },
      agentEnv: {
        env: [
          { name: "GAVEL_LLM_BASE_URL", value: "https://llm.example/v1" },
          { name: "GAVEL_LLM_API_KEY", valueFrom: { secretKeyRef: { name: "llm", key: "api-key" } } },
          { name: "GAVEL_LLM_MODEL", valueFrom: { configMapKeyRef: { name: "llm", key: "model", optional: true } } },
          { name: "MODE", value: "lax" },
        ],
        envFrom: [{ secretRef: { name: "team" }, prefix: "TEAM_" }, { configMapRef: { name: "defaults" } }],
      },
    };
    const c = podManifest({ spec: withAgentEnv, name, instance: "abcd1234", user: NOBODY }).spec!.containers[0]!;
    expect(c.env).toEqual([
      { name: "GAVEL_LLM_BASE_URL", value: "https://llm.example/v1" },
      { name: "GAVEL_LLM_API_KEY", valueFrom: { secretKeyRef: { name: "llm", key: "api-key" } } },
      { name: "GAVEL_LLM_MODEL", valueFrom: { configMapKeyRef: { name: "llm", key: "model", optional: true } } },
      { name: "HOME", value: "/tmp" },
      { name: "GAVEL_EXECUTION", value: "exec-1" },
      { name: "MODE", value: "strict" },
    ]);
    expect(c.envFrom).toEqual([{ prefix: "TEAM_", secretRef: { name: "team" } }, { configMapRef: { name: "defaults" } }]);
    expect(main.envFrom).toBeUndefined();
  });

  it("runs once with the deadline as activeDeadlineSeconds (rounded up) and no API token", () => {
    expect(spec.restartPolicy).toBe("Never");
    expect(spec.activeDeadlineSeconds).toBe(91);
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(main.imagePullPolicy).toBe("Never");
  });

  it("is hardened: nobody, no escalation, no capabilities, read-only root with an emptyDir /tmp, RuntimeDefault seccomp", () => {
    expect(spec.securityContext).toMatchObject({
      runAsUser: 65534,
      runAsGroup: 65534,
      runAsNonRoot: true,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(main.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      privileged: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(spec.volumes).toContainEqual({ name: "tmp", emptyDir: { sizeLimit: "64Mi" } });
    expect(main.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
    expect(main.env).toContainEqual({ name: "HOME", value: "/tmp" });
    expect(main.env).toContainEqual({ name: "MODE", value: "strict" });
  });

  it("mounts a judge's claim read-only on both the volume and the volumeMount", () => {
    expect(spec.volumes).toContainEqual({ name: "m0", persistentVolumeClaim: { claimName: "ws-claim", readOnly: true } });
    expect(main.volumeMounts).toContainEqual({ name: "m0", mountPath: "/workspace", readOnly: true });
  });

  it("labels the pod with the runtime instance, the workload and the network mode, keeping the spec's labels", () => {
    expect(pod.metadata?.labels).toEqual({
      "gavel.dev/role": "judge",
      [LABELS.managed]: "gavel-kubernetes-runtime",
      [LABELS.instance]: "abcd1234",
      [LABELS.workload]: name,
      [LABELS.network]: "none",
    });
    expect(pod.metadata?.ownerReferences).toBeUndefined();
  });

  it("sets limits from the spec and small requests", () => {
    expect(main.resources).toEqual({
      limits: { memory: String(256 * 1024 * 1024), cpu: "500m" },
      requests: { memory: String(16 * 1024 * 1024), cpu: "10m" },
    });
    expect(resourcesFor({ ...judge, resources: undefined })).toEqual({ requests: { cpu: "10m", memory: "16Mi" } });
  });

  it("runs a known program under gavel-launch, mounted read-only and executable from the namespace's launcher ConfigMap", () => {
    const cm = launcherConfigMap(Buffer.from("\x7fELF launcher"));
    expect(cm.metadata?.name).toMatch(/^gavel-launch-[0-9a-f]{10}$/);
    expect(cm.immutable).toBe(true);
    expect(Buffer.from(cm.binaryData?.["gavel-launch"] ?? "", "base64").toString()).toBe("\x7fELF launcher");
    expect(launcherConfigMap(Buffer.from("other")).metadata?.name).not.toBe(cm.metadata?.name);
    const p = podManifest({ spec: judge, name, instance: "abcd1234", user: NOBODY, launcherConfigMap: cm.metadata!.name! });
    const c = p.spec!.containers[0]!;
    expect(c.command).toEqual([LAUNCHER_PATH, "node", "judge.js"]);
    expect(c.volumeMounts).toContainEqual({ name: "gavel-launch", mountPath: LAUNCHER_DIR, readOnly: true });
    expect(p.spec!.volumes).toContainEqual({ name: "gavel-launch", configMap: { name: cm.metadata!.name!, defaultMode: 0o555 } });
    expect(p.spec!.initContainers).toBeUndefined();
    expect(p.metadata?.annotations?.[LOG_STREAMS_ANNOTATION]).toBe("framed");
    // The image's own program, when gavel knows it, is launched the same way.
    const known = podManifest({
      spec: { ...judge, command: undefined, entrypoint: ["python3", "/app/j.py"] },
      name,
      instance: "i",
      user: NOBODY,
      launcherConfigMap: "l",
    });
    expect(known.spec!.containers[0]!.command).toEqual([LAUNCHER_PATH, "python3", "/app/j.py"]);
  });

  it("leaves an unknown program bare (no launcher mounted, log unframed), and without a launcher too", () => {
    const unknown = podManifest({ spec: { ...judge, command: undefined }, name, instance: "i", user: NOBODY, launcherConfigMap: "l" });
    expect(unknown.spec!.volumes?.map((v) => v.name)).not.toContain("gavel-launch");
    expect(unknown.spec!.containers[0]!.command).toBeUndefined();
    expect(unknown.metadata?.annotations).toBeUndefined();
    const none = podManifest({ spec: judge, name, instance: "i", user: NOBODY });
    expect(none.spec!.containers[0]!.command).toEqual(["node", "judge.js"]);
    expect(none.spec!.initContainers).toBeUndefined();
    expect(specProblem({ ...judge, mounts: [{ ...judge.mounts[0]!, mountPath: LAUNCHER_DIR }] })).toMatch(/reserved/);
  });

  it("passes owner references through to the pod", () => {
    const ownerReferences = [{ apiVersion: "gavel.dev/v1alpha1", kind: "Execution", name: "e", uid: "u-1", controller: true }];
    expect(podManifest({ spec: judge, name, instance: "abcd1234", user: NOBODY, ownerReferences }).metadata?.ownerReferences).toEqual(
      ownerReferences,
    );
    expect(main.stdin).toBeUndefined();
  });
});

describe("userFor", () => {
  it("runs read-only workloads as nobody and writers as the configured user", () => {
    expect(userFor(judge.mounts, { uid: 1000, gid: 1000 })).toEqual(NOBODY);
    const rw = [{ ...judge.mounts[0]!, readOnly: false }];
    expect(userFor(rw, { uid: 1000, gid: 1000 })).toEqual({ uid: 1000, gid: 1000 });
    expect(userFor(rw)).toEqual(NOBODY);
  });

  it("drops runAsNonRoot only when the writer is explicitly root", () => {
    const rw = { ...judge, mounts: [{ ...judge.mounts[0]!, readOnly: false }] };
    const p = podManifest({ spec: rw, name: "n", instance: "i", user: { uid: 0, gid: 0 } });
    expect(p.spec?.securityContext?.runAsNonRoot).toBe(false);
    expect(p.spec?.containers[0]?.securityContext?.allowPrivilegeEscalation).toBe(false);
  });
});

describe("specProblem", () => {
  it("accepts a valid spec", () => {
    expect(specProblem(judge)).toBeUndefined();
  });

  it.each<[string, Partial<WorkloadSpec>, RegExp]>([
    ["empty name", { name: " " }, /spec\.name/],
    ["empty image", { image: "" }, /spec\.image/],
    ["zero timeout", { timeoutSeconds: 0 }, /spec\.timeoutSeconds/],
    ["empty command", { command: [] }, /spec\.command is empty/],
    ["any stdin (nothing writes it)", { stdin: "x" }, /^spec\.stdin: a pod gets no stdin; pass the input in env or ConfigMap parts/],
    [
      "host path as source",
      { mounts: [{ name: "w", source: "/srv/ws", mountPath: "/w", readOnly: true }] },
      /spec\.mounts\[0\]\.source must be a PersistentVolumeClaim/,
    ],
    [
      "relative mountPath",
      { mounts: [{ name: "w", source: "c", mountPath: "w", readOnly: true }] },
      /spec\.mounts\[0\]\.mountPath must be absolute/,
    ],
    ["reserved /tmp", { mounts: [{ name: "w", source: "c", mountPath: "/tmp", readOnly: true }] }, /reserved/],
    [
      "duplicate mountPath",
      {
        mounts: [
          { name: "a", source: "c", mountPath: "/w", readOnly: true },
          { name: "b", source: "d", mountPath: "/w", readOnly: true },
        ],
      },
      /spec\.mounts\[1\]\.mountPath \/w is mounted twice/,
    ],
  ])("rejects %s naming the field", (_what, patch, message) => {
    expect(specProblem({ ...judge, ...patch })).toMatch(message);
  });
});

describe("denyAllNetworkPolicy", () => {
  it("selects network=none pods and allows nothing in either direction", () => {
    const np = denyAllNetworkPolicy();
    expect(np.spec?.podSelector).toEqual({ matchLabels: { [LABELS.network]: "none" } });
    expect(np.spec?.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(np.spec?.ingress).toEqual([]);
    expect(np.spec?.egress).toEqual([]);
  });
});

describe("stuckReason", () => {
  it("reports an image that will never be pulled, and ignores ordinary waiting", () => {
    const waiting = (reason: string) => ({
      status: {
        containerStatuses: [
          { name: "main", image: "i", imageID: "", ready: false, restartCount: 0, state: { waiting: { reason, message: "m" } } },
        ],
      },
    });
    expect(stuckReason(waiting("ErrImageNeverPull"))).toBe("ErrImageNeverPull: m");
    expect(stuckReason(waiting("ContainerCreating"))).toBeUndefined();
    expect(stuckReason({})).toBeUndefined();
  });

  it("reports the launcher's init container that cannot start or failed", () => {
    const init = (state: object) => ({
      status: { initContainerStatuses: [{ name: "gavel-launch", image: "i", imageID: "", ready: false, restartCount: 0, state }] },
    });
    expect(stuckReason(init({ waiting: { reason: "ErrImageNeverPull", message: "m" } }))).toBe(
      "init container gavel-launch: ErrImageNeverPull: m",
    );
    expect(stuckReason(init({ terminated: { exitCode: 1, reason: "Error" } }))).toBe("init container gavel-launch failed (exit 1): Error");
    expect(stuckReason(init({ terminated: { exitCode: 0 } }))).toBeUndefined();
  });

  it("a sidecar (restartPolicy Always) that ended does not make the pod stuck; one whose image is missing does", () => {
    const sidecar = (state: object) => ({
      spec: { containers: [], initContainers: [{ name: "gavel-copy-source", restartPolicy: "Always" }] },
      status: { initContainerStatuses: [{ name: "gavel-copy-source", image: "i", imageID: "", ready: false, restartCount: 0, state }] },
    });
    expect(stuckReason(sidecar({ terminated: { exitCode: 137, reason: "Error" } }))).toBeUndefined();
    expect(stuckReason(sidecar({ waiting: { reason: "ErrImageNeverPull", message: "m" } }))).toBe(
      "init container gavel-copy-source: ErrImageNeverPull: m",
    );
  });
});

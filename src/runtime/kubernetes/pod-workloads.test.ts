// The Workloads port on Kubernetes without I/O: how a placement shapes the pod (owner, node,
// credential Secret, payload parts, gavel-launch), how a pod reads as an observation, how long
// an ended pod is kept.
import { describe, expect, it } from "vitest";
import type { WorkloadSpec } from "../workload.js";
import { keepPodUntil, observationOf, podEnd, podFor, WORKER_CREDS_DIR } from "./pod-workloads.js";

const spec: WorkloadSpec = {
  name: "demo-i1",
  image: "gavel/agent:dev",
  entrypoint: ["node", "main.js"],
  mounts: [{ name: "workspace", source: "demo-workspace", mountPath: "/workspace", readOnly: false }],
  network: "none",
  timeoutSeconds: 60,
};
const owner = { apiVersion: "100monkeys.ai/v1", kind: "Execution", name: "demo", uid: "uid-1", controller: true, blockOwnerDeletion: true };
const shape = { instance: "ex" };

describe("pod workloads: placement", () => {
  it("a bare placement gives the hardened pod in its namespace's terms: deterministic name, no owner, no affinity, no credential, the program bare", () => {
    const pod = podFor(spec, { namespace: "team" }, shape);
    expect(pod.metadata?.name).toBe("gavel-demo-i1-ex");
    expect(pod.metadata?.ownerReferences).toBeUndefined();
    expect(pod.spec?.affinity).toBeUndefined();
    expect(pod.spec?.volumes?.map((v) => v.name)).not.toContain("nats-credentials");
    expect(pod.spec?.containers[0]?.imagePullPolicy).toBe("IfNotPresent");
  });

  it("owner, node, credential Secret and payload parts each land where Kubernetes reads them", () => {
    const pod = podFor(
      spec,
      {
        namespace: "team",
        owner,
        node: "node-a",
        credentialSecret: "demo-nats-uid",
        parts: {
          volume: "input",
          prefix: "demo-input",
          descriptor: { parts: 2, bytes: 10, sha256: "x" },
          mountPath: "/var/run/gavel/input",
        },
      },
      { ...shape, imagePullPolicy: "Never", writerUser: { uid: 1000, gid: 1000 } },
    );
    expect(pod.metadata?.ownerReferences).toEqual([owner]);
    expect(pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms).toEqual([
      { matchFields: [{ key: "metadata.name", operator: "In", values: ["node-a"] }] },
    ]);
    expect(pod.spec?.volumes).toContainEqual({
      name: "nats-credentials",
      secret: { secretName: "demo-nats-uid", defaultMode: 0o444, items: [{ key: "nats.creds", path: "nats.creds" }] },
    });
    const main = pod.spec?.containers[0];
    expect(main?.env).toContainEqual({ name: "GAVEL_NATS_CREDS_FILE", value: `${WORKER_CREDS_DIR}/nats.creds` });
    expect(main?.volumeMounts).toContainEqual({ name: "input", mountPath: "/var/run/gavel/input", readOnly: true });
    expect(pod.spec?.volumes?.find((v) => v.name === "input")?.projected?.sources?.map((s) => s.configMap?.name)).toEqual([
      "demo-input-00",
      "demo-input-01",
    ]);
    expect(main?.imagePullPolicy).toBe("Never");
    // A writable mount runs as the writer user.
    expect(pod.spec?.securityContext?.runAsUser).toBe(1000);
  });

  it("streams apart run a known program under gavel-launch when the namespace has it; merged (the default) never does", () => {
    const launched = podFor(spec, { namespace: "team", streams: "apart" }, { ...shape, launcherConfigMap: "gavel-launch" });
    expect(launched.spec?.containers[0]?.command?.slice(1)).toEqual(["node", "main.js"]);
    expect(launched.spec?.volumes?.map((v) => v.name)).toContain("gavel-launch");
    const merged = podFor(spec, { namespace: "team" }, { ...shape, launcherConfigMap: "gavel-launch" });
    expect(merged.spec?.volumes?.map((v) => v.name)).not.toContain("gavel-launch");
    expect(podFor(spec, { namespace: "team", streams: "apart" }, shape).spec?.volumes?.map((v) => v.name)).not.toContain("gavel-launch");
  });
});

describe("pod workloads: observation", () => {
  const terminated = (exitCode: number, finishedAt?: string) => [
    {
      name: "main",
      image: "",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode, ...(finishedAt !== undefined ? { finishedAt: finishedAt as unknown as Date } : {}) } },
    },
  ];
  it("a pod reads as absent, pending, running, stuck or ended (with where it ran)", () => {
    expect(observationOf(undefined)).toEqual({ state: "absent" });
    expect(observationOf({ status: { phase: "Pending" } })).toEqual({ state: "pending" });
    expect(observationOf({ spec: { nodeName: "n1", containers: [] }, status: { phase: "Running" } })).toEqual({
      state: "running",
      node: "n1",
    });
    expect(
      observationOf({
        status: {
          phase: "Pending",
          containerStatuses: [
            {
              name: "main",
              image: "",
              imageID: "",
              ready: false,
              restartCount: 0,
              state: { waiting: { reason: "ErrImageNeverPull", message: "no image" } },
            },
          ],
        },
      }),
    ).toEqual({ state: "stuck", reason: "ErrImageNeverPull: no image" });
    expect(
      observationOf({
        spec: { nodeName: "n1", containers: [] },
        status: { phase: "Failed", containerStatuses: terminated(3, "2026-11-25T17:00:00Z") },
      }),
    ).toEqual({ state: "ended", exitCode: 3, timedOut: false, finishedAt: new Date("2026-11-25T17:00:00Z"), node: "n1" });
    expect(observationOf({ status: { phase: "Failed", reason: "DeadlineExceeded" } })).toEqual({
      state: "ended",
      exitCode: 137,
      timedOut: true,
    });
  });

  it("keeps an ended pod for its retention past its end, and deletes a running one, or one past it, at once", () => {
    const ended = (finishedAt: string, phase = "Succeeded") => ({
      status: {
        phase,
        containerStatuses: [
          {
            name: "main",
            image: "",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 0, finishedAt: finishedAt as unknown as Date } },
          },
        ],
      },
    });
    const t = Date.parse("2026-11-25T17:00:00Z");
    expect(keepPodUntil(ended("2026-11-25T17:00:00Z"), 600, t + 1000)).toBe(t + 600_000);
    expect(keepPodUntil(ended("2026-11-25T17:00:00Z", "Failed"), 600, t + 599_000)).toBe(t + 600_000);
    expect(keepPodUntil(ended("2026-11-25T17:00:00Z"), 600, t + 600_000)).toBeUndefined();
    expect(keepPodUntil(ended("2026-11-25T17:00:00Z"), 0, t)).toBeUndefined();
    expect(keepPodUntil({ status: { phase: "Running" } }, 600, t)).toBeUndefined();
    expect(keepPodUntil({ status: { phase: "Failed" } }, 600, t)).toBeUndefined();
  });

  it("reads a pod stopped from outside: OOM-killed, evicted (the Eviction API's condition, the kubelet's Evicted), deleted (issue 24 item 6)", () => {
    const main = (reason: string, exitCode: number) => [
      { name: "main", image: "", imageID: "", ready: false, restartCount: 0, state: { terminated: { exitCode, reason } } },
    ];
    expect(podEnd({ status: { phase: "Failed", containerStatuses: main("OOMKilled", 137) } })).toEqual({
      exitCode: 137,
      timedOut: false,
      oomKilled: true,
    });
    const evicted = {
      metadata: { uid: "u-1" },
      status: {
        phase: "Failed",
        containerStatuses: main("Error", 143),
        conditions: [{ type: "DisruptionTarget", status: "True", reason: "EvictionByEvictionAPI", message: "Eviction API: evicting" }],
      },
    };
    expect(podEnd(evicted)).toEqual({
      exitCode: 143,
      timedOut: false,
      lost: { id: "u-1", reason: "EvictionByEvictionAPI: Eviction API: evicting" },
    });
    expect(observationOf(evicted)).toMatchObject({ state: "ended", lost: { id: "u-1" } });
    expect(
      podEnd({
        metadata: { uid: "u-2" },
        status: { phase: "Failed", reason: "Evicted", message: "The node was low on resource: memory." },
      }),
    ).toEqual({
      exitCode: 137,
      timedOut: false,
      lost: { id: "u-2", reason: "Evicted: The node was low on resource: memory." },
    });
    const deleted = {
      metadata: { uid: "u-3", deletionTimestamp: new Date() },
      status: { phase: "Succeeded", containerStatuses: main("Completed", 0) },
    };
    expect(podEnd(deleted)?.lost).toEqual({ id: "u-3", reason: "deleted" });
    // Running while it is deleted: not ended yet.
    expect(podEnd({ metadata: { deletionTimestamp: new Date() }, status: { phase: "Running" } })).toBeUndefined();
  });

  it("reads how a pod ended: exit code, deadline, or never starting", () => {
    expect(podEnd({ status: { phase: "Running" } })).toBeUndefined();
    expect(
      podEnd({
        status: {
          phase: "Succeeded",
          containerStatuses: [
            { name: "main", image: "", imageID: "", ready: false, restartCount: 0, state: { terminated: { exitCode: 0 } } },
          ],
        },
      }),
    ).toEqual({ exitCode: 0, timedOut: false });
    expect(podEnd({ status: { phase: "Failed", reason: "DeadlineExceeded" } })).toEqual({ exitCode: 137, timedOut: true });
    // A pod with native sidecars passes its deadline while they stop: a main container that
    // ended by itself before the deadline keeps its exit code and was not killed; one that
    // ended at or after the deadline was.
    const ended = (finishedAt: string) =>
      podEnd({
        spec: { containers: [], activeDeadlineSeconds: 60 },
        status: {
          phase: "Failed",
          reason: "DeadlineExceeded",
          startTime: new Date("2026-12-07T14:00:00Z"),
          containerStatuses: [
            {
              name: "main",
              image: "",
              imageID: "",
              ready: false,
              restartCount: 0,
              state: { terminated: { exitCode: 75, finishedAt: new Date(finishedAt) } },
            },
          ],
        },
      });
    expect(ended("2026-12-07T14:00:58Z")).toEqual({ exitCode: 75, timedOut: false });
    expect(ended("2026-12-07T14:01:00Z")).toEqual({ exitCode: 75, timedOut: true });
    const stuck = podEnd({
      status: {
        phase: "Pending",
        containerStatuses: [
          {
            name: "main",
            image: "",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: "ErrImageNeverPull", message: "no image" } },
          },
        ],
      },
    });
    expect(stuck).toEqual({ exitCode: -1, timedOut: false, stuck: "ErrImageNeverPull: no image" });
  });
});

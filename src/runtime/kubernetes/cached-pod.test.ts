// What the pod cache keeps: every pod field gavel reads gives the same answer from the trimmed
// pod as from the whole one (observation, end, stuck reason, merged-streams reason, the copy
// source sidecar), and what no reader needs (env with a judge's payload, volumes) is gone.
import type * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { cachedPod } from "./cached-pod.js";
import { mergedStreamsReason, podStreams } from "./log-streams.js";
import { stuckReason } from "./pod-spec.js";
import { observationOf, podEnd, podFor } from "./pod-workloads.js";

const judge = podFor(
  {
    name: "run-i1-v0-judge",
    image: "gavel/rule-judge:dev",
    entrypoint: ["node", "main.js"],
    env: { GAVEL_INPUT: "x".repeat(90_000) },
    mounts: [{ name: "workspace", source: "run-workspace", mountPath: "/workspace", readOnly: true }],
    network: "none",
    timeoutSeconds: 60,
  },
  { namespace: "team", node: "node-a" },
  { instance: "ex", launcherConfigMap: "gavel-launch-abc" },
);
const withSidecar: k8s.V1Pod = {
  ...judge,
  spec: { ...(judge.spec as k8s.V1PodSpec), initContainers: [{ name: "gavel-copy-source", image: "gavel/base", restartPolicy: "Always" }] },
};
const ended = (pod: k8s.V1Pod, status: k8s.V1PodStatus): k8s.V1Pod => ({
  ...pod,
  metadata: { ...pod.metadata, managedFields: [{ manager: "kubelet", operation: "Update" }] },
  spec: { ...(pod.spec as k8s.V1PodSpec), nodeName: "node-a" },
  status,
});

const pods: k8s.V1Pod[] = [
  ended(judge, {
    phase: "Succeeded",
    startTime: new Date("2026-12-07T10:00:00Z"),
    containerStatuses: [
      {
        name: "main",
        image: "gavel/rule-judge:dev",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { terminated: { exitCode: 0, finishedAt: new Date("2026-12-07T10:00:05Z") } },
      },
    ],
  }),
  ended(judge, { phase: "Failed", reason: "DeadlineExceeded", startTime: new Date("2026-12-07T10:00:00Z") }),
  ended(withSidecar, {
    phase: "Pending",
    initContainerStatuses: [
      {
        name: "gavel-copy-source",
        image: "",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { waiting: { reason: "ImagePullBackOff" } },
      },
    ],
  }),
  { metadata: { name: "bare", namespace: "team" }, spec: { containers: [{ name: "main", image: "busybox" }] } },
];

describe("the pod cache", () => {
  it("answers every read gavel makes of a pod as the whole pod does", () => {
    for (const pod of pods) {
      const kept = cachedPod(pod);
      expect(observationOf(kept)).toEqual(observationOf(pod));
      expect(podEnd(kept)).toEqual(podEnd(pod));
      expect(stuckReason(kept)).toEqual(stuckReason(pod));
      expect(mergedStreamsReason(kept)).toEqual(mergedStreamsReason(pod));
      expect(podStreams(kept, "log")).toEqual(podStreams(pod, "log"));
      expect(kept.metadata?.ownerReferences).toEqual(pod.metadata?.ownerReferences);
      expect(kept.metadata?.labels).toEqual(pod.metadata?.labels);
      expect(kept.metadata?.annotations).toEqual(pod.metadata?.annotations);
      expect(kept.spec?.initContainers?.map((c) => [c.name, c.restartPolicy])).toEqual(
        pod.spec?.initContainers?.map((c) => [c.name, c.restartPolicy]),
      );
    }
  });

  it("drops what no reader needs: managedFields, the env holding a judge's payload, volumes and mounts", () => {
    const whole = pods[0] as k8s.V1Pod;
    const kept = cachedPod(whole);
    expect(kept.metadata).not.toHaveProperty("managedFields");
    expect(kept.spec?.containers[0]).not.toHaveProperty("env");
    expect(kept.spec).not.toHaveProperty("volumes");
    expect(JSON.stringify(kept).length).toBeLessThan(JSON.stringify(whole).length / 10);
  });
});

// What of a pod the controller's pod cache keeps: the fields PodWorkloads and the reconciler's
// concerns read (observationOf, podEnd, stuckReason, mergedStreamsReason, the copy source), not
// the env (a judge's payload can be 96 KiB of it), volumes, mounts, security contexts. The
// API server keeps the whole pod; nothing writes a cached pod back (pods are created and deleted).
import type * as k8s from "@kubernetes/client-node";

/** A pod as the cache keeps it: metadata without managedFields, the spec fields gavel reads, the whole status. */
export function cachedPod(pod: k8s.V1Pod): k8s.V1Pod {
  const { managedFields: _dropped, ...metadata } = pod.metadata ?? {};
  const spec = pod.spec;
  return {
    ...(pod.apiVersion !== undefined ? { apiVersion: pod.apiVersion } : {}),
    ...(pod.kind !== undefined ? { kind: pod.kind } : {}),
    metadata,
    ...(spec === undefined
      ? {}
      : {
          spec: {
            ...(spec.nodeName !== undefined ? { nodeName: spec.nodeName } : {}),
            ...(spec.activeDeadlineSeconds !== undefined ? { activeDeadlineSeconds: spec.activeDeadlineSeconds } : {}),
            containers: spec.containers.map(container),
            ...(spec.initContainers !== undefined ? { initContainers: spec.initContainers.map(container) } : {}),
          },
        }),
    ...(pod.status !== undefined ? { status: pod.status } : {}),
  };
}

/** A container's name, image, program and restart policy (a native sidecar's Always). */
function container(c: k8s.V1Container): k8s.V1Container {
  return {
    name: c.name,
    ...(c.image !== undefined ? { image: c.image } : {}),
    ...(c.command !== undefined ? { command: c.command } : {}),
    ...(c.restartPolicy !== undefined ? { restartPolicy: c.restartPolicy } : {}),
  };
}

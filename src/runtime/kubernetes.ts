// What the rest of gavel uses of the Kubernetes runtime (src/runtime/kubernetes/): PodWorkloads
// and its placement, the hardened pod spec's names, the framed log streams, ConfigMap parts and
// egress host resolution. Every module behind it imports only node's built-ins and gavel's own
// lower floors, so loading this face costs no npm package (ADR 0055).
export {
  describeParts,
  descriptorText,
  joinParts,
  PART_BYTES,
  parseDescriptor,
  partConfigMaps,
  partName,
  type PartsDescriptor,
} from "./kubernetes/configmap-parts.js";
export { cachedPod } from "./kubernetes/cached-pod.js";
export { cidrOf, systemResolver, type HostResolver } from "./kubernetes/egress-hosts.js";
export { FramedLogReader, isFramed, LAUNCHER_PATH, podStreams } from "./kubernetes/log-streams.js";
export { LABELS, MAIN_CONTAINER, MANAGED_BY, podName, type PodUser } from "./kubernetes/pod-spec.js";
export { PodWorkloads, WORKER_CREDS_KEY, type PodPlacement, type PodSidecar } from "./kubernetes/pod-workloads.js";

// kwok's configuration for the scale harness (kwok.ts): the Stages that play a simulated
// node's and pod's lifecycle, and the ClusterLogs that say which log file each pod's kubelet
// endpoint serves. Plain text, no I/O, so a unit test reads it.

/** Which pods serve which log file (kwok ClusterLogs: selected by pod name). */
export interface PodLogs {
  /** The ClusterLogs object's name, e.g. "workers". */
  name: string;
  /** A log file in the CRI format a kubelet keeps (criLog). */
  file: string;
  /** Names of the pods that serve it. */
  pods: string[];
}

/** What the simulated pods do: how long a started pod runs before it ends, and what each one logs. */
export interface KwokPlay {
  /** Milliseconds from Running to Succeeded (exit code 0). */
  podRunMs: number;
  logs: PodLogs[];
  /**
   * Pods that run until `annotation` is set on them rather than for `podRunMs`: their program
   * ends when the harness says so (the tools variant's workers end after their calls).
   */
  held?: { pods: string[]; annotation: string };
}

/**
 * A kubelet's log file (CRI format, as kwok and the kubelet read it back) of a container that
 * wrote `text` to its stdout: one full ("F") line per line of text. The text is the container's
 * one stream as the runtime saw it, so a pod under gavel-launch gets its framed stream.
 */
export function criLog(text: string, at: Date = new Date()): string {
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
  return lines.map((l) => `${at.toISOString()} stdout F ${l}\n`).join("");
}

// A node becomes Ready with kwok's address (127.0.0.1, --node-ip) and kubelet port (--node-port)
// at once; no heartbeat: no node lifecycle controller runs that would mark it NotReady, and its
// writes would only add to the API server's load what gavel does not cause.
const NODE_INITIALIZE = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: node-initialize }
spec:
  resourceRef: { apiGroup: v1, kind: Node }
  selector:
    matchExpressions:
      - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
        operator: NotIn
        values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      - address: {{ NodeIP | Quote }}
        type: InternalIP
      - address: {{ NodeName | Quote }}
        type: Hostname
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ NodePort }}
      allocatable: { cpu: 1k, memory: 1Ti, pods: 1M }
      capacity: { cpu: 1k, memory: 1Ti, pods: 1M }
      nodeInfo:
        architecture: amd64
        operatingSystem: linux
        kubeletVersion: {{ printf "kwok-%s" Version | Quote }}
      phase: Running
`;

// A scheduled pod starts at once: its init containers ran (exit 0), its main container runs.
const POD_READY = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-ready }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
      - { key: .metadata.deletionTimestamp, operator: DoesNotExist }
      - { key: .status.phase, operator: In, values: [Pending] }
      - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
        operator: NotIn
        values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized }
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready }
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady }
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        {{ if eq .restartPolicy "Always" }}
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
        {{ else }}
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
        {{ end }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
`;

/**
 * A running pod's main container exits 0 after `ms`; the pod is Succeeded, as its restartPolicy
 * Never makes it. `only` narrows which pods (more selector lines), `name` names the Stage.
 */
function podComplete(ms: number, only: string[] = [], name = "pod-complete"): string {
  return `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: ${name} }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
      - { key: .metadata.deletionTimestamp, operator: DoesNotExist }
      - { key: .status.phase, operator: In, values: [Running] }
${only.map((l) => `      - ${l}\n`).join("")}  delay:
    durationMilliseconds: ${Math.max(0, Math.round(ms))}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - { lastTransitionTime: {{ $now | Quote }}, status: "False", type: Ready, reason: PodCompleted }
      - { lastTransitionTime: {{ $now | Quote }}, status: "False", type: ContainersReady, reason: PodCompleted }
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
`;
}

// What a kubelet does for a pod being deleted with a grace period: it goes once stopped.
const POD_DELETE = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-delete }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
      - { key: .metadata.deletionTimestamp, operator: Exists }
      - { key: .metadata.finalizers, operator: DoesNotExist }
  next:
    delete: true
`;

function clusterLogs(l: PodLogs): string {
  return `apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata: { name: ${JSON.stringify(l.name)} }
spec:
  selector:
    matchNames: ${JSON.stringify(l.pods)}
  logs:
    - containers: [main]
      logsFile: ${JSON.stringify(l.file)}
`;
}

/** kwok's --config file: the Stages of the play and its ClusterLogs, as YAML documents. */
export function kwokConfig(play: KwokPlay): string {
  const held = play.held;
  const complete =
    held === undefined
      ? [podComplete(play.podRunMs)]
      : [
          podComplete(play.podRunMs, [`{ key: .metadata.name, operator: NotIn, values: ${JSON.stringify(held.pods)} }`]),
          // A held pod's program ended: its container exits at once.
          podComplete(0, [`{ key: '.metadata.annotations["${held.annotation}"]', operator: Exists }`], "pod-complete-held"),
        ];
  return [NODE_INITIALIZE, POD_READY, ...complete, POD_DELETE, ...play.logs.map(clusterLogs)].join("---\n");
}

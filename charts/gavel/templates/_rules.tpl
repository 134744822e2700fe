{{/* The controller's rules, the same for the ClusterRole and the single-namespace Role. */}}
{{- define "gavel.rules" -}}
# Agent readiness lists/watches Agents and writes their Ready condition (merge patch); the
# Execution reconciler reads the Agent (and judge Agents) an Execution runs.
- apiGroups: ["100monkeys.ai"]
  resources: ["agents"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["100monkeys.ai"]
  resources: ["agents/status"]
  verbs: ["patch"]
# GuardPolicy hot reload: list/watch policies, report Ready/compile errors in status.
- apiGroups: ["100monkeys.ai"]
  resources: ["guardpolicies"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["100monkeys.ai"]
  resources: ["guardpolicies/status"]
  verbs: ["patch"]
# Execution reconciler: watches Executions, creates judge runs as child Executions, writes
# the status with resourceVersion (update, retried on conflict). Children and pods carry a
# controller ownerReference with blockOwnerDeletion, which needs update on finalizers.
- apiGroups: ["100monkeys.ai"]
  resources: ["executions"]
  verbs: ["get", "list", "watch", "create"]
- apiGroups: ["100monkeys.ai"]
  resources: ["executions/status", "executions/finalizers"]
  verbs: ["update"]
# Tool calls that need a person (ADR 0067): the gate creates a ToolApproval owned by the
# Execution, watches it until decided, expired or its run ended, and writes its phase (never the
# decision: the controller has no approve verb, and the admission policy requires it).
- apiGroups: ["100monkeys.ai"]
  resources: ["toolapprovals"]
  verbs: ["create", "get", "list", "watch"]
- apiGroups: ["100monkeys.ai"]
  resources: ["toolapprovals/status"]
  verbs: ["patch", "update"]
# Workloads: each iteration, each judge and each file reader is a pod; the controller
# watches them, reads them, deletes them when done, and a closed runtime removes its
# leftovers with one deletecollection by label. patch: a warm judge pod is claimed for one
# call (its annotation and owner become the judge child's, ADR 0070).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["create", "get", "list", "watch", "patch", "delete", "deletecollection"]
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
# Tool-call judges of a ReadWriteOncePod workspace (ADR 0041): their copies are streamed out of
# the running worker's pod, `tar c` in its copy-source sidecar into `tar x` in the judge's
# copier. A warm judge pod runs its call's judge by exec, the payload on stdin (ADR 0070).
# An exec is a websocket GET, which Kubernetes >= 1.31 also authorizes as create.
- apiGroups: [""]
  resources: ["pods/exec"]
  verbs: ["create", "get"]
# A workload with a command gets its stdin from a ConfigMap beside its pod; a finished
# worker's result is kept in a ConfigMap (read back on later reconciles) before its pod is
# deleted. No list or watch: other ConfigMaps cannot be enumerated.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "get", "delete", "deletecollection"]
# Workspace volumes: one claim per Execution volume, owned by the Execution (the garbage
# collector deletes it with the Execution). get: before a run starts, a claim of its name still
# owned by an earlier, deleted Execution of the same name is waited for, never used.
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["create", "get"]
# Workspace strategy snapshot (ADR 0038): a judge's VolumeSnapshot of the worker's claim (owned
# by the judge child; a claim is restored from it), the class picked from the StorageClass's
# CSI driver. StorageClasses and VolumeSnapshotClasses are cluster-scoped: a single-namespace
# install cannot read them, and refuses snapshot with that reason.
- apiGroups: ["storage.k8s.io"]
  resources: ["storageclasses"]
  verbs: ["list"]
- apiGroups: ["snapshot.storage.k8s.io"]
  resources: ["volumesnapshotclasses"]
  verbs: ["list"]
- apiGroups: ["snapshot.storage.k8s.io"]
  resources: ["volumesnapshots"]
  verbs: ["create", "get"]
# network: none workloads (judges, readers) get a deny-all NetworkPolicy in their
# namespace, created once and kept; a workload with an allowlist gets its own, owned by
# its Execution.
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["create"]
{{- if include "gavel.natsCredentialsSecret" . }}
# Per-Execution NATS credentials (docs/nats.md): a Secret owned by each Execution, created
# before its first worker pod; the garbage collector deletes it with the Execution. Create
# only: the controller never reads a Secret back.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["create"]
{{- end }}
# Engine events (execution.started, iteration.started, validator.result, ...) recorded as
# Kubernetes Events on the Execution, for kubectl describe.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- end -}}

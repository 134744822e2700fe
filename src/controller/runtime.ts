// What the rest of gavel uses of the controller runtime (src/controller/runtime/): the kubeconfig
// loader, the API server readiness check, the health endpoint server and the replica Leases (one
// per running replica, ADR 0074). Its informers, queue and leader lease are the controllers' own
// and stay inside.
export { ApiServerCheck } from "./runtime/api-server-check.js";
export { EndpointServer, parseBindAddress, probeRoutes, type Check, type Routes } from "./runtime/health.js";
export { loadKubeConfig } from "./runtime/kube-config.js";
export { ReplicaLeases } from "./runtime/replica-leases.js";
export { alsoAdmitting, NamespaceScope, type NamespaceFilter } from "./runtime/namespace-scope.js";

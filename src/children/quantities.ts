// Kubernetes-style resource quantities ("512Mi", "1G", "500m" CPUs) turned into the numbers
// a WorkloadSpec holds, for every driver.
import type { Agent } from "../api/types.js";
import type { WorkloadSpec } from "../runtime/workload.js";

const MEMORY_UNITS: Record<string, number> = {
  "": 1,
  k: 1e3,
  K: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};

/** Bytes of a memory quantity such as "512Mi" or "1G"; undefined when absent or malformed. */
export function parseMemoryBytes(q: string | undefined): number | undefined {
  if (q === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)([KMGT]i?|k)?$/.exec(q.trim());
  if (m === null) return undefined;
  const unit = MEMORY_UNITS[m[2] ?? ""];
  return unit === undefined ? undefined : Math.round(Number(m[1]) * unit);
}

/** Nano-CPUs of a CPU quantity such as "500m" or "2"; undefined when absent or malformed. */
export function parseNanoCpus(q: string | undefined): number | undefined {
  if (q === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(m)?$/.exec(q.trim());
  if (m === null) return undefined;
  const cores = m[2] === "m" ? Number(m[1]) / 1000 : Number(m[1]);
  return cores > 0 ? Math.round(cores * 1e9) : undefined;
}

/** Memory and CPU limits of an Agent (`security.resources`), as a WorkloadSpec holds them. */
export function resourcesOf(agent: Agent): NonNullable<WorkloadSpec["resources"]> {
  const r = agent.spec.security?.resources;
  const memoryBytes = parseMemoryBytes(r?.memory);
  const nanoCpus = parseNanoCpus(r?.cpu);
  return { ...(memoryBytes !== undefined ? { memoryBytes } : {}), ...(nanoCpus !== undefined ? { nanoCpus } : {}) };
}

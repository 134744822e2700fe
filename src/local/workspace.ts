// The workspace volumes of a local run: one temporary host directory per volume of the
// Agent (or one `/workspace` when it declares none), removed when the run ends.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import type { Agent } from "../api/types.js";
import type { WorkloadMount } from "../runtime/workload.js";

/** Where a worker's files live when its Agent declares no volume. */
export const DEFAULT_WORKSPACE = { name: "workspace", mount_path: "/workspace" } as const;

/** The host directories of one run's volumes. */
export interface Workspace {
  /** Read-write mounts for the worker. */
  mounts: WorkloadMount[];
  /** The same volumes read-only, at the same paths, for judges and readers. */
  readOnly(): WorkloadMount[];
  /** The mount that holds an absolute path in the container, if any. */
  mountFor(path: string): WorkloadMount | undefined;
  remove(): Promise<void>;
}

/** Creates the host directories for the Agent's volumes. */
export async function createWorkspace(agent: Agent, execution: string): Promise<Workspace> {
  const volumes = volumesOf(agent);
  const root = await mkdtemp(join(tmpdir(), `gavel-${execution.replace(/[^a-zA-Z0-9-]/g, "-")}-`));
  const mounts: WorkloadMount[] = [];
  for (const v of volumes) {
    const source = await mkdtemp(join(root, `${v.name.replace(/[^a-zA-Z0-9-]/g, "-")}-`));
    // The worker may run as another uid than ours (a non-root image user).
    await chmod(source, 0o777);
    mounts.push({ name: v.name, source, mountPath: posix.normalize(v.mount_path), readOnly: false });
  }
  return workspaceOf(mounts, () => rm(root, { recursive: true, force: true }));
}

/** The Agent's volumes, or the one default `/workspace` when it declares none. */
export function volumesOf(agent: Agent): readonly { name: string; mount_path: string }[] {
  return agent.spec.volumes !== undefined && agent.spec.volumes.length > 0 ? agent.spec.volumes : [DEFAULT_WORKSPACE];
}

/** A Workspace over these mounts; `remove` deletes what backs them. */
export function workspaceOf(mounts: WorkloadMount[], remove: () => Promise<void>): Workspace {
  return {
    mounts,
    readOnly: () => mounts.map((m) => ({ ...m, readOnly: true })),
    mountFor(path) {
      const full = posix.normalize(path);
      // The longest mount path that contains the file wins (nested volumes).
      let best: WorkloadMount | undefined;
      for (const m of mounts) {
        const prefix = m.mountPath.endsWith("/") ? m.mountPath : `${m.mountPath}/`;
        if ((full === m.mountPath || full.startsWith(prefix)) && (best === undefined || m.mountPath.length > best.mountPath.length))
          best = m;
      }
      return best;
    },
    remove,
  };
}

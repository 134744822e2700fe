// The Workloads port without containers, a test double for unit tests and the engine bench:
// each run's result comes from a behaviour function; readers of a mounted volume read a map of
// files as `cat` would; the workspace's volumes are names, not directories. Never used by `gavel run`.
import { isDeepStrictEqual } from "node:util";
import { posix } from "node:path";
import type { Agent } from "../../src/api/types.js";
import { volumesOf, workspaceOf, type Workspace } from "../../src/local/workspace.js";
import type {
  OwnedWorkloads,
  WorkloadMount,
  WorkloadObservation,
  WorkloadOutput,
  WorkloadPlacement,
  Workloads,
  WorkloadSpec,
} from "../../src/runtime/workload.js";
import { READER_MISSING, readerCommand } from "../../src/runtime/file-reader.js";
import { messageOf } from "../../src/errors.js";

/** What a simulated workload does: its exit and output, or hang until stopped or killed. */
export interface SimulatedRun {
  exitCode?: number;
  stdout?: string;
  stderr?: string;
  /** Runs until its deadline or a stop. */
  hang?: boolean;
}

/** Decides a simulated workload's run; may write files through the workloads. */
export type Behaviour = (spec: WorkloadSpec, workloads: InMemoryWorkloads) => SimulatedRun | Promise<SimulatedRun>;

interface Simulated {
  place: WorkloadPlacement;
  labels: Readonly<Record<string, string>>;
  end?: { exitCode: number; stdout: string; stderr: string; timedOut: boolean; finishedAt: Date };
  ended: Promise<void>;
  finish(end: Partial<NonNullable<Simulated["end"]>>): void;
}

/** Runs workloads as function calls; `files` is keyed by `<mount source>:<path in container>`. */
export class InMemoryWorkloads implements Workloads, OwnedWorkloads {
  readonly files = new Map<string, string>();
  /** Every spec ensured, in order (tests inspect mounts, env, network). */
  readonly started: WorkloadSpec[] = [];
  /** The names of the workloads killed while they ran. */
  readonly stopped: string[] = [];
  /** Keep `started` (tests) or not (the bench, so memory stays flat). */
  record = true;
  private readonly live = new Map<string, Simulated>();

  constructor(private readonly behaviour: Behaviour) {}

  /** Writes a file into a mount as a workload would; refuses read-only mounts like the kernel does. */
  write(mount: WorkloadMount, path: string, content: string): void {
    if (mount.readOnly) throw new Error(`EROFS: read-only file system, open '${path}'`);
    this.files.set(`${mount.source}:${posix.normalize(path)}`, content);
  }

  ensure(spec: WorkloadSpec, place: WorkloadPlacement): Promise<boolean> {
    if (this.live.has(spec.name)) return Promise.resolve(false);
    if (this.record) this.started.push(spec);
    let settle!: () => void;
    const w: Simulated = {
      place,
      labels: spec.labels ?? {},
      ended: new Promise<void>((resolve) => (settle = resolve)),
      finish: (end) => {
        if (w.end !== undefined) return;
        clearTimeout(timer);
        w.end = { exitCode: 0, stdout: "", stderr: "", timedOut: false, finishedAt: new Date(), ...end };
        settle();
      },
    };
    const timer = setTimeout(() => w.finish({ exitCode: 137, timedOut: true }), spec.timeoutSeconds * 1000);
    this.live.set(spec.name, w);
    void Promise.resolve()
      .then(() => this.simulate(spec))
      .then(
        (run) => {
          if (run.hang !== true) w.finish({ exitCode: run.exitCode ?? 0, stdout: run.stdout ?? "", stderr: run.stderr ?? "" });
        },
        (err: unknown) => w.finish({ exitCode: 1, stderr: messageOf(err) }),
      );
    return Promise.resolve(true);
  }

  observe(name: string, _place: WorkloadPlacement): Promise<WorkloadObservation> {
    const end = this.live.get(name)?.end;
    if (!this.live.has(name)) return Promise.resolve({ state: "absent" });
    return Promise.resolve(
      end === undefined
        ? { state: "running" }
        : { state: "ended", exitCode: end.exitCode, timedOut: end.timedOut, finishedAt: end.finishedAt },
    );
  }

  output(name: string, _place: WorkloadPlacement): Promise<WorkloadOutput> {
    const end = this.live.get(name)?.end;
    if (end === undefined) return Promise.reject(new Error(`${name} has not ended`));
    return Promise.resolve({ stdout: end.stdout, stderr: end.stderr, truncated: false });
  }

  retire(name: string, _place: WorkloadPlacement, retentionSeconds: number): Promise<number | undefined> {
    const w = this.live.get(name);
    if (w === undefined) return Promise.resolve(undefined);
    if (w.end === undefined) {
      if (this.record) this.stopped.push(name);
      w.finish({ exitCode: 137 });
    }
    // Kept for its retention after its end, as a pod is for `kubectl logs`.
    const until = (w.end?.finishedAt.getTime() ?? Date.now()) + retentionSeconds * 1000;
    if (retentionSeconds > 0 && until > Date.now()) return Promise.resolve(until);
    this.live.delete(name);
    return Promise.resolve(undefined);
  }

  async retireOwned(
    namespace: string | undefined,
    owner: string,
    retentionSeconds: number,
    which: (labels: Readonly<Record<string, string>>) => boolean = () => true,
  ): Promise<number | undefined> {
    let next: number | undefined;
    for (const [name, w] of [...this.live]) {
      if (
        w.place.owner?.name !== owner ||
        (namespace !== undefined && namespace !== "" && w.place.namespace !== namespace) ||
        !which(w.labels)
      )
        continue;
      const until = await this.retire(name, w.place, retentionSeconds);
      if (until !== undefined) next = Math.min(next ?? until, until);
    }
    return next;
  }

  /** The names of the workloads that exist now (not retired), in the order they were ensured. */
  names(): string[] {
    return [...this.live.keys()];
  }

  mayHaveEnded(name: string, _place: WorkloadPlacement): Promise<void> {
    return this.live.get(name)?.ended ?? Promise.resolve();
  }

  /** A reader of a mounted volume reads `files`; any other workload runs the behaviour. */
  private simulate(spec: WorkloadSpec): SimulatedRun | Promise<SimulatedRun> {
    const path = spec.command?.at(-1);
    const mount = spec.mounts[0];
    if (path === undefined || mount === undefined || !isDeepStrictEqual(spec.command, readerCommand(path)))
      return this.behaviour(spec, this);
    const content = this.files.get(`${mount.source}:${posix.normalize(path)}`);
    return content === undefined ? { exitCode: READER_MISSING } : { stdout: content };
  }
}

/** A local run's workspace whose sources are names, not directories (for InMemoryWorkloads). */
export function virtualWorkspace(agent: Agent, execution: string): Promise<Workspace> {
  const mounts = volumesOf(agent).map((v) => ({
    name: v.name,
    source: `mem://${execution}/${v.name}`,
    mountPath: posix.normalize(v.mount_path),
    readOnly: false,
  }));
  return Promise.resolve(workspaceOf(mounts, () => Promise.resolve()));
}

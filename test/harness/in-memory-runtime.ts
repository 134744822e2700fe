// A WorkloadRuntime without containers, a test double for unit tests and the engine bench: each
// result comes from a behaviour function, files live in a map. Never used by `gavel run`.
import { posix } from "node:path";
import type { WorkloadHandle, WorkloadMount, WorkloadResult, WorkloadRuntime, WorkloadSpec } from "../../src/runtime/workload.js";
import { messageOf } from "../../src/errors.js";

/** What a simulated workload does: its exit and output, or hang until stopped or killed. */
export interface SimulatedRun {
  exitCode?: number;
  stdout?: string;
  stderr?: string;
  /** Runs until its deadline or a stop. */
  hang?: boolean;
}

/** Decides a simulated workload's run; may write files through the runtime. */
export type Behaviour = (spec: WorkloadSpec, runtime: InMemoryRuntime) => SimulatedRun | Promise<SimulatedRun>;

/** Runs workloads as function calls; `files` is keyed by `<mount source>:<path in container>`. */
export class InMemoryRuntime implements WorkloadRuntime {
  readonly files = new Map<string, string>();
  /** Every spec started, in order (tests inspect mounts, env, network). */
  readonly started: WorkloadSpec[] = [];
  readonly stopped: string[] = [];
  /** Keep `started` (tests) or not (the bench, so memory stays flat). */
  record = true;

  constructor(private readonly behaviour: Behaviour) {}

  /** Writes a file into a mount as a workload would; refuses read-only mounts like the kernel does. */
  write(mount: WorkloadMount, path: string, content: string): void {
    if (mount.readOnly) throw new Error(`EROFS: read-only file system, open '${path}'`);
    this.files.set(`${mount.source}:${posix.normalize(path)}`, content);
  }

  start(spec: WorkloadSpec): Promise<WorkloadHandle> {
    if (this.record) this.started.push(spec);
    const startedAt = new Date();
    let settle!: (r: WorkloadResult) => void;
    const result = new Promise<WorkloadResult>((resolve) => (settle = resolve));
    let done = false;
    const end = (r: Partial<WorkloadResult>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      settle({ exitCode: 0, stdout: "", stderr: "", truncated: false, timedOut: false, cancelled: false, startedAt, finishedAt: new Date(), ...r });
    };
    const timer = setTimeout(() => end({ exitCode: 137, timedOut: true }), spec.timeoutSeconds * 1000);
    void Promise.resolve()
      .then(() => this.behaviour(spec, this))
      .then(
        (run) => {
          if (run.hang !== true) end({ exitCode: run.exitCode ?? 0, stdout: run.stdout ?? "", stderr: run.stderr ?? "" });
        },
        (err: unknown) => end({ exitCode: 1, stderr: messageOf(err) }),
      );
    return Promise.resolve({
      name: spec.name,
      wait: () => result,
      stop: () => {
        if (this.record) this.stopped.push(spec.name);
        end({ exitCode: 137, cancelled: true });
        return Promise.resolve();
      },
    });
  }

  readFile(mount: WorkloadMount, path: string): Promise<string | undefined> {
    return Promise.resolve(this.files.get(`${mount.source}:${posix.normalize(path)}`));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

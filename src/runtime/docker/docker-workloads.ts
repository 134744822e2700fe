// The level-triggered workload port (ADR 0030) on a local Docker engine (dockerode): one
// hardened container per workload, named by its spec. `ensure` creates and starts it (and
// feeds its stdin: a container, unlike a pod, keeps a process to write it); its deadline is a
// label, so `observe` needs no timer: it inspects the container and kills one past its
// deadline. `output` reads the ended container's log (capped, stdout and stderr apart);
// `retire` removes it.
import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import Docker from "dockerode";
import type { WorkloadObservation, WorkloadOutput, WorkloadPlacement, Workloads, WorkloadSpec } from "../workload.js";
import { CappedDemuxer } from "./capped-demux.js";
import { LABELS, MANAGED_BY, containerConfig, containerName, specProblem, userFor } from "./container-config.js";
import { httpStatusOf, isConflict, isNotFound, messageOf } from "../../errors.js";

/** A Docker engine call failed; `cause` holds dockerode's error. */
export class DockerRuntimeError extends Error {
  override readonly name = "DockerRuntimeError";
}

/** How DockerWorkloads is set up; everything has a default that works on this machine. */
export interface DockerWorkloadsOptions {
  /** A dockerode client; default: the engine at `socketPath`. */
  docker?: Docker;
  /** Default /var/run/docker.sock. */
  socketPath?: string;
  /** Forces the container user (e.g. "1000:1000"); by default see `userFor`. */
  user?: string;
}

/** The label holding a container's deadline (ms since the epoch). */
export const DEADLINE_LABEL = "gavel.dev/deadline";

// setTimeout-free, but a deadline still has to be a finite number of ms.
const MAX_DEADLINE_MS = 8.64e15;

/** Workloads as Docker containers on one engine. */
export class DockerWorkloads implements Workloads {
  readonly docker: Docker;
  /** Identifies this instance's containers (label + name suffix) among others on the engine. */
  readonly instance: string;
  private readonly user: string | undefined;

  constructor(options: DockerWorkloadsOptions = {}) {
    this.docker = options.docker ?? new Docker({ socketPath: options.socketPath ?? "/var/run/docker.sock" });
    this.instance = randomBytes(4).toString("hex");
    this.user = options.user;
  }

  /** Creates, starts and feeds a container for the spec; one of that name is adopted (false). */
  async ensure(spec: WorkloadSpec, place: WorkloadPlacement): Promise<boolean> {
    const problem = specProblem(spec) ?? placementProblem(spec, place);
    if (problem !== undefined) throw new DockerRuntimeError(problem);
    const name = containerName(spec.name, this.instance);
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    const options = containerConfig({
      spec,
      name,
      instance: this.instance,
      ownerPid: process.pid,
      user: userFor(spec.mounts, uid, gid, this.user),
    });
    options.Labels = { ...options.Labels, [DEADLINE_LABEL]: String(Math.min(Date.now() + spec.timeoutSeconds * 1000, MAX_DEADLINE_MS)) };
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(options);
    } catch (err) {
      if (isConflict(err)) return false;
      const hint = isNotFound(err) ? ` (image ${spec.image} is not on this engine: build it, e.g. make images)` : "";
      throw new DockerRuntimeError(`creating the container for ${spec.name} failed${hint}: ${messageOf(err)}`, { cause: err });
    }
    try {
      await begin(container, spec.stdin);
    } catch (err) {
      await removeQuietly(container);
      throw new DockerRuntimeError(`starting ${spec.name} failed: ${messageOf(err)}`, { cause: err });
    }
    return true;
  }

  /** Inspects the container; one running past its deadline is killed (and seen ended, timed out, next time). */
  async observe(name: string, _place: WorkloadPlacement): Promise<WorkloadObservation> {
    const container = this.container(name);
    let info: Docker.ContainerInspectInfo;
    try {
      info = await container.inspect();
    } catch (err) {
      if (isNotFound(err)) return { state: "absent" };
      throw new DockerRuntimeError(`inspecting ${name} failed: ${messageOf(err)}`, { cause: err });
    }
    const deadline = Number(info.Config.Labels[DEADLINE_LABEL] ?? Number.NaN);
    const s = info.State;
    if (s.Running) {
      if (Number.isFinite(deadline) && Date.now() >= deadline) await killQuietly(container);
      return { state: "running" };
    }
    if (s.Status === "created") return { state: "pending" };
    const finishedAt = new Date(s.FinishedAt);
    // Ended after its deadline: observe killed it (or would have).
    const timedOut = Number.isFinite(deadline) && finishedAt.getTime() >= deadline;
    return { state: "ended", exitCode: s.ExitCode, timedOut, finishedAt };
  }

  /** The ended container's log: stdout and stderr apart, each capped at OUTPUT_CAP_BYTES. */
  async output(name: string, _place: WorkloadPlacement): Promise<WorkloadOutput> {
    const demux = new CappedDemuxer();
    try {
      // Followed, so it arrives as a stream and only the capped part is kept in memory; the
      // container has ended, so the stream ends at the log's end.
      const log = await this.container(name).logs({ follow: true, stdout: true, stderr: true });
      await new Promise<void>((resolve, reject) => {
        log.on("data", (chunk: Buffer) => demux.write(chunk));
        log.on("end", resolve);
        log.on("close", resolve);
        log.on("error", reject);
      });
    } catch (err) {
      throw new DockerRuntimeError(`reading the log of ${name} failed: ${messageOf(err)}`, { cause: err });
    }
    return {
      stdout: demux.stdout.text(),
      stderr: demux.stderr.text(),
      truncated: demux.stdout.truncated || demux.stderr.truncated,
    };
  }

  /**
   * Kills it if it runs, then removes it unless it ended less than `retentionSeconds` ago
   * (then it is kept, for its log, and the result is when it may go).
   */
  async retire(name: string, _place: WorkloadPlacement, retentionSeconds: number): Promise<number | undefined> {
    const container = this.container(name);
    await killQuietly(container);
    if (retentionSeconds > 0) {
      try {
        const info = await container.inspect();
        const keepUntil = new Date(info.State.FinishedAt).getTime() + retentionSeconds * 1000;
        if (keepUntil > Date.now()) return keepUntil;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    }
    await removeQuietly(container);
    return undefined;
  }

  /** Resolves when the container is no longer running (the engine's wait), or is gone. */
  async mayHaveEnded(name: string, _place: WorkloadPlacement): Promise<void> {
    await this.container(name)
      .wait({ condition: "not-running" })
      .catch(() => undefined);
  }

  /** Removes every container of this instance still on the engine. */
  removeAll(): Promise<number> {
    return removeContainers(this.docker, { [LABELS.instance]: this.instance });
  }

  private container(name: string): Docker.Container {
    return this.docker.getContainer(containerName(name, this.instance));
  }
}

/** What of a placement one engine cannot honour, naming the field. */
function placementProblem(spec: WorkloadSpec, place: WorkloadPlacement): string | undefined {
  for (const field of ["owner", "node", "credentialSecret"] as const) {
    if (place[field] !== undefined)
      return `placement.${field} is for a cluster; a local Docker engine cannot honour it (workload ${spec.name})`;
  }
  return undefined;
}

/** Starts a created container; with stdin, attaches first, then writes it and closes it. */
async function begin(container: Docker.Container, stdin: string | undefined): Promise<void> {
  if (stdin === undefined) {
    await container.start();
    return;
  }
  const stream = await container.attach({ stream: true, stdin: true, stdout: false, stderr: false, hijack: true });
  stream.on("error", () => undefined);
  stream.resume();
  await container.start();
  // Ending the write side closes the container's stdin (StdinOnce).
  stream.write(stdin);
  (stream as unknown as Duplex).end();
}

async function killQuietly(container: Docker.Container): Promise<void> {
  try {
    await container.kill({ signal: "SIGKILL" });
  } catch (err) {
    // 409/304/404: it had already ended (or is gone).
    if (!isConflict(err) && !isNotFound(err) && httpStatusOf(err) !== 304) throw err;
  }
}

async function removeQuietly(container: Docker.Container): Promise<void> {
  try {
    await container.remove({ force: true, v: true });
  } catch (err) {
    // 404: already gone; 409: removal already in progress. Both mean nothing is left to do.
    if (!isNotFound(err) && !isConflict(err)) throw err;
  }
}

/** Removes every gavel container matching the labels (default: all of them). */
export async function removeContainers(docker: Docker, labels: Record<string, string> = {}): Promise<number> {
  const filters = [`${LABELS.managed}=${MANAGED_BY}`, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)];
  const list = await docker.listContainers({ all: true, filters: { label: filters } });
  await Promise.all(list.map((c) => removeQuietly(docker.getContainer(c.Id))));
  return list.length;
}

/**
 * Removes containers left by runtimes whose process is gone (a crashed run): those whose
 * owner pid is not alive on this host. Containers of live runtimes are left alone.
 */
export async function removeStaleContainers(docker: Docker): Promise<number> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${LABELS.managed}=${MANAGED_BY}`] } });
  const stale = list.filter((c) => {
    const pid = Number(c.Labels[LABELS.ownerPid]);
    return !Number.isInteger(pid) || pid <= 0 || !processAlive(pid);
  });
  await Promise.all(stale.map((c) => removeQuietly(docker.getContainer(c.Id))));
  return stale.length;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

// The WorkloadRuntime on a local Docker engine (dockerode): one hardened container per
// workload, attached before start so no output is lost, removed afterwards whatever happens.
import { randomBytes } from "node:crypto";
import { posix } from "node:path";
import type { Duplex } from "node:stream";
import Docker from "dockerode";
import type { WorkloadHandle, WorkloadMount, WorkloadResult, WorkloadRuntime, WorkloadSpec } from "../workload.js";
import { OUTPUT_CAP_BYTES } from "../workload.js";
import { CappedDemuxer } from "./capped-demux.js";
import { LABELS, MANAGED_BY, containerConfig, containerName, specProblem, userFor } from "./container-config.js";
import { READER_MISSING, volumeReader } from "../file-reader.js";
import { httpStatusOf, messageOf } from "../../errors.js";

/** How a DockerRuntime is set up; everything has a default that works on this machine. */
export interface DockerRuntimeOptions {
  /** A dockerode client; default: the engine at `socketPath`. */
  docker?: Docker;
  /** Default /var/run/docker.sock. */
  socketPath?: string;
  /** Image for the short-lived read-only reader of `readFile`; needs `sh` and `cat`. */
  readerImage?: string;
  /** Forces the container user (e.g. "1000:1000"); by default see `userFor`. */
  user?: string;
  /** Seconds a reader may take before it is killed. Default 30. */
  readerTimeoutSeconds?: number;
}

/** A Docker engine call failed; `cause` holds dockerode's error. */
export class DockerRuntimeError extends Error {
  override readonly name = "DockerRuntimeError";
}

/** Runs workloads as Docker containers. */
export class DockerRuntime implements WorkloadRuntime {
  private readonly docker: Docker;
  /** Identifies this runtime's containers (label + name suffix) among others on the engine. */
  readonly instance: string;
  private readonly live = new Map<string, DockerWorkload>();
  private readonly readerImage: string;
  private readonly readerTimeoutSeconds: number;
  private readonly user: string | undefined;
  private closed = false;

  constructor(options: DockerRuntimeOptions = {}) {
    this.docker = options.docker ?? new Docker({ socketPath: options.socketPath ?? "/var/run/docker.sock" });
    this.instance = randomBytes(4).toString("hex");
    this.readerImage = options.readerImage ?? "gavel/base:bookworm-node20";
    this.readerTimeoutSeconds = options.readerTimeoutSeconds ?? 30;
    this.user = options.user;
  }

  /** Creates, attaches and starts a container for the spec; resolves once it is running. */
  async start(spec: WorkloadSpec): Promise<WorkloadHandle> {
    if (this.closed) throw new DockerRuntimeError(`runtime is closed; cannot start ${spec.name}`);
    const problem = specProblem(spec);
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
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(options);
    } catch (err) {
      const status = httpStatusOf(err);
      const hint =
        status === 404 ? ` (image ${spec.image} is not on this engine: build it, e.g. make images)` :
        status === 409 ? ` (a container named ${name} already exists)` : "";
      throw new DockerRuntimeError(`creating the container for ${spec.name} failed${hint}: ${messageOf(err)}`, { cause: err });
    }
    const workload = new DockerWorkload(spec, container, () => this.live.delete(name));
    this.live.set(name, workload);
    try {
      await workload.begin();
    } catch (err) {
      this.live.delete(name);
      await removeQuietly(container);
      throw new DockerRuntimeError(`starting ${spec.name} failed: ${messageOf(err)}`, { cause: err });
    }
    return workload;
  }

  /**
   * Reads `path` (relative to the mount, or absolute under its mountPath) through a
   * short-lived reader container with the volume mounted read-only and no network: a
   * symlink the worker planted resolves inside the container, never on this host.
   */
  async readFile(mount: WorkloadMount, path: string): Promise<string | undefined> {
    const inside = resolveInMount(mount.mountPath, path);
    const handle = await this.start(volumeReader(`reader-${randomBytes(3).toString("hex")}`, this.readerImage, mount, inside, this.readerTimeoutSeconds));
    const r = await handle.wait();
    if (r.exitCode === READER_MISSING) return undefined;
    if (r.timedOut) throw new DockerRuntimeError(`reading ${inside} from volume ${mount.name} timed out`);
    if (r.exitCode !== 0) {
      throw new DockerRuntimeError(`reading ${inside} from volume ${mount.name} failed (exit ${r.exitCode}): ${r.stderr.trim()}`);
    }
    if (r.truncated) {
      throw new DockerRuntimeError(`${inside} in volume ${mount.name} is larger than ${OUTPUT_CAP_BYTES} bytes`);
    }
    return r.stdout;
  }

  /** Stops and removes every container this runtime started that is still around. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.live.values()].map((w) => w.stop()));
    await Promise.all([...this.live.values()].map((w) => w.wait().catch(() => undefined)));
    // Anything the map lost track of (a crash between create and bookkeeping).
    await removeContainers(this.docker, { [LABELS.instance]: this.instance });
  }
}

/** Resolves a file path inside a mount; refuses paths that leave it. */
export function resolveInMount(mountPath: string, path: string): string {
  const root = posix.normalize(mountPath);
  const full = posix.normalize(path.startsWith("/") ? path : posix.join(root, path));
  const prefix = root.endsWith("/") ? root : `${root}/`;
  if (full !== root && !full.startsWith(prefix)) {
    throw new DockerRuntimeError(`path ${path} is outside the mount ${mountPath}`);
  }
  return full;
}

async function removeQuietly(container: Docker.Container): Promise<void> {
  try {
    await container.remove({ force: true, v: true });
  } catch (err) {
    // 404: already gone; 409: removal already in progress. Both mean nothing is left to do.
    const status = httpStatusOf(err);
    if (status !== 404 && status !== 409) throw err;
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

type EndReason = "deadline" | "stop";

/** One running container: output collection, deadline, stop and removal. */
class DockerWorkload implements WorkloadHandle {
  readonly name: string;
  private readonly demux = new CappedDemuxer();
  private attach: NodeJS.ReadWriteStream | undefined;
  private streamEnded: Promise<void> = Promise.resolve();
  private startedAt = new Date();
  private killReason: EndReason | undefined;
  private kill: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private result: Promise<WorkloadResult> | undefined;

  constructor(
    private readonly spec: WorkloadSpec,
    private readonly container: Docker.Container,
    private readonly forget: () => void,
  ) {
    this.name = spec.name;
  }

  /** Attaches, starts, feeds stdin and arms the deadline. */
  async begin(): Promise<void> {
    const withStdin = this.spec.stdin !== undefined;
    const stream = await this.container.attach({ stream: true, stdin: withStdin, stdout: true, stderr: true, hijack: withStdin });
    this.attach = stream;
    this.streamEnded = new Promise<void>((resolve) => {
      stream.on("data", (chunk: Buffer) => this.demux.write(chunk));
      stream.on("end", resolve);
      stream.on("close", resolve);
      stream.on("error", () => resolve());
    });
    await this.container.start();
    this.startedAt = new Date();
    if (withStdin) {
      // Ending the write side closes the container's stdin (StdinOnce).
      stream.write(this.spec.stdin ?? "");
      (stream as unknown as Duplex).end();
    }
    // setTimeout fires at once past 2^31-1 ms (~24.8 days); longer deadlines are capped there.
    this.timer = setTimeout(() => this.end("deadline"), Math.min(this.spec.timeoutSeconds * 1000, 2 ** 31 - 1));
    this.result = this.finish();
    // wait() may be called late; the result is kept until then.
    this.result.catch(() => undefined);
  }

  wait(): Promise<WorkloadResult> {
    if (this.result === undefined) return Promise.reject(new DockerRuntimeError(`${this.name} was never started`));
    return this.result;
  }

  stop(): Promise<void> {
    this.end("stop");
    return this.kill ?? Promise.resolve();
  }

  private end(reason: EndReason): void {
    if (this.kill !== undefined) return;
    this.killReason = reason;
    this.kill = this.container.kill({ signal: "SIGKILL" }).then(
      () => undefined,
      (err: unknown) => {
        // 409/304/404: it had already exited on its own; it was neither stopped nor timed out.
        const status = httpStatusOf(err);
        if (status === 409 || status === 304 || status === 404) this.killReason = undefined;
        else throw err;
      },
    );
    this.kill.catch(() => undefined);
  }

  private async finish(): Promise<WorkloadResult> {
    try {
      const status = (await this.container.wait()) as { StatusCode?: number };
      const finishedAt = new Date();
      if (this.timer !== undefined) clearTimeout(this.timer);
      if (this.kill !== undefined) await this.kill.catch(() => undefined);
      // The attach stream drains shortly after exit; don't hang if the engine never closes it.
      await Promise.race([this.streamEnded, delay(5000)]);
      (this.attach as unknown as Duplex | undefined)?.destroy();
      return {
        exitCode: status.StatusCode ?? -1,
        stdout: this.demux.stdout.text(),
        stderr: this.demux.stderr.text(),
        truncated: this.demux.stdout.truncated || this.demux.stderr.truncated,
        timedOut: this.killReason === "deadline",
        cancelled: this.killReason === "stop",
        startedAt: this.startedAt,
        finishedAt,
      };
    } finally {
      if (this.timer !== undefined) clearTimeout(this.timer);
      await removeQuietly(this.container).catch(() => undefined);
      this.forget();
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

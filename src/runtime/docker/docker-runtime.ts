// The start-and-wait WorkloadRuntime local mode uses, over the level-triggered DockerWorkloads
// (ADR 0030): `start` ensures the container, its handle follows it to its end (runToEnd's
// loop), and `stop` kills it. Every container is removed afterwards whatever happens.
import { randomBytes } from "node:crypto";
import { posix } from "node:path";
import type Docker from "dockerode";
import type { WorkloadHandle, WorkloadMount, WorkloadPlacement, WorkloadResult, WorkloadRuntime, WorkloadSpec } from "../workload.js";
import { OUTPUT_CAP_BYTES } from "../workload.js";
import { followToEnd } from "../run-to-end.js";
import { containerName } from "./container-config.js";
import { DockerRuntimeError, DockerWorkloads } from "./docker-workloads.js";
import { READER_MISSING, volumeReader } from "../file-reader.js";

export { DockerRuntimeError, removeContainers, removeStaleContainers } from "./docker-workloads.js";

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

/** Local mode has no namespaces on the engine; the placement only names it. */
const LOCAL: WorkloadPlacement = { namespace: "local" };

/** Runs workloads as Docker containers. */
export class DockerRuntime implements WorkloadRuntime {
  readonly workloads: DockerWorkloads;
  private readonly live = new Map<string, { stop: AbortController; result: Promise<WorkloadResult> }>();
  private readonly readerImage: string;
  private readonly readerTimeoutSeconds: number;
  private closed = false;

  constructor(options: DockerRuntimeOptions = {}) {
    this.workloads = new DockerWorkloads({
      ...(options.docker !== undefined ? { docker: options.docker } : {}),
      ...(options.socketPath !== undefined ? { socketPath: options.socketPath } : {}),
      ...(options.user !== undefined ? { user: options.user } : {}),
    });
    this.readerImage = options.readerImage ?? "gavel/base:bookworm-node20";
    this.readerTimeoutSeconds = options.readerTimeoutSeconds ?? 30;
  }

  /** Identifies this runtime's containers (label + name suffix) among others on the engine. */
  get instance(): string {
    return this.workloads.instance;
  }

  /** Creates and starts a container for the spec; resolves once it is running. */
  async start(spec: WorkloadSpec): Promise<WorkloadHandle> {
    if (this.closed) throw new DockerRuntimeError(`runtime is closed; cannot start ${spec.name}`);
    if (this.live.has(spec.name)) {
      throw new DockerRuntimeError(`creating the container for ${spec.name} failed (a container named ${containerName(spec.name, this.instance)} already exists)`);
    }
    const stop = new AbortController();
    // Claimed before the engine is asked, so two starts of one name cannot share a container.
    const entry = { stop, result: Promise.resolve(undefined as unknown as WorkloadResult) };
    this.live.set(spec.name, entry);
    try {
      await this.workloads.ensure(spec, LOCAL);
    } catch (err) {
      this.live.delete(spec.name);
      throw err;
    }
    const startedAt = new Date();
    entry.result = followToEnd(this.workloads, spec, LOCAL, startedAt, { signal: stop.signal }).finally(() => this.live.delete(spec.name));
    // wait() may be called late; the result is kept until then.
    entry.result.catch(() => undefined);
    const result = entry.result;
    return {
      name: spec.name,
      wait: () => result,
      stop: () => {
        stop.abort();
        return result.then(
          () => undefined,
          () => undefined,
        );
      },
    };
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
    const live = [...this.live.values()];
    for (const w of live) w.stop.abort();
    await Promise.all(live.map((w) => w.result.catch(() => undefined)));
    // Anything the map lost track of (a crash between create and bookkeeping).
    await this.workloads.removeAll();
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

// stdout apart from stderr on Kubernetes: pods/log (1.31) merges a container's two streams, so
// gavel's pods run their program under gavel-launch (src/launcher/gavel-launch.c), mounted from
// a ConfigMap of the namespace, which writes one framed stream. This module is both ends'
// contract: the ConfigMap that holds the launcher, where pods find it, and the decoder.
import { createHash } from "node:crypto";
import type * as k8s from "@kubernetes/client-node";

/** Where a pod mounts the launcher's ConfigMap (read-only, mode 0555). */
export const LAUNCHER_DIR = "/gavel-launch";
/** The launcher's key in its ConfigMap, and so its file name under LAUNCHER_DIR. */
const LAUNCHER_KEY = "gavel-launch";
export const LAUNCHER_PATH = `${LAUNCHER_DIR}/${LAUNCHER_KEY}`;
/** Name of the pod volume that mounts it. */
export const LAUNCHER_VOLUME = "gavel-launch";

/**
 * The ConfigMap holding the launcher binary, one per namespace and launcher build:
 * `gavel-launch-<sha256 prefix>`, immutable, shared by every pod there (not owned: like the
 * namespace's NetworkPolicy, it stays). A ConfigMap holds 1 MiB; the static launcher is ~0.7 MB.
 */
export function launcherConfigMap(binary: Buffer, labels: Record<string, string> = {}): k8s.V1ConfigMap {
  const hash = createHash("sha256").update(binary).digest("hex").slice(0, 10);
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: `gavel-launch-${hash}`, labels },
    immutable: true,
    binaryData: { [LAUNCHER_KEY]: binary.toString("base64") },
  };
}
/** Annotation of a pod whose main container runs under the launcher: its log is framed. */
export const LOG_STREAMS_ANNOTATION = "gavel.dev/log-streams";
export const FRAMED = "framed";

const RS = "\x1e";

/** A program's two output streams. */
export interface Streams {
  stdout: string;
  stderr: string;
  /** Set when they could not be kept apart (the pod did not run under gavel-launch): why stdout holds stderr too. */
  streamsMerged?: string;
}

/**
 * Reads a framed log as it arrives: a line is stdout as written unless it starts with RS
 * (0x1e); then it is a record RS + type + bytes, type O (a stdout line), o (stdout bytes without
 * a newline), E (a stderr line), e (stderr bytes without a newline). A last line without a
 * newline is stdout as it is. A record of an unknown type is kept as stdout, so nothing is
 * ever dropped.
 */
export class FramedLogReader {
  private partial = "";

  constructor(private readonly emit: (stream: keyof Streams, text: string) => void) {}

  /** Takes the next piece of the log (any cut). */
  push(text: string): void {
    const buf = this.partial + text;
    let at = 0;
    for (;;) {
      const nl = buf.indexOf("\n", at);
      if (nl < 0) break;
      this.line(buf.slice(at, nl), "\n");
      at = nl + 1;
    }
    this.partial = buf.slice(at);
  }

  /** The log ended: a last line without a newline is emitted as it is. */
  end(): void {
    if (this.partial !== "") this.line(this.partial, "");
    this.partial = "";
  }

  private line(line: string, newline: string): void {
    const type = line.startsWith(RS) ? line[1] : undefined;
    const body = line.slice(2);
    if (type === "O") this.emit("stdout", `${body}\n`);
    else if (type === "o") this.emit("stdout", body);
    else if (type === "E") this.emit("stderr", `${body}\n`);
    else if (type === "e") this.emit("stderr", body);
    else this.emit("stdout", line + newline);
  }
}

/** Splits a whole framed log into its two streams (see FramedLogReader). */
export function splitFramedLog(log: string): Streams {
  const out: Streams = { stdout: "", stderr: "" };
  const reader = new FramedLogReader((stream, text) => {
    out[stream] += text;
  });
  reader.push(log);
  reader.end();
  return out;
}

/** True when a pod ran its program under gavel-launch, so its log is framed. */
export function isFramed(pod: k8s.V1Pod | undefined): boolean {
  return pod?.metadata?.annotations?.[LOG_STREAMS_ANNOTATION] === FRAMED;
}

/**
 * Why a pod's log merges stderr into stdout: it did not run its program under gavel-launch.
 * Kubernetes cannot say what an image's ENTRYPOINT is, so a program gavel does not know (no
 * `spec.runtime.command`, no runtime table `command`, not an image gavel builds) runs bare.
 */
export function mergedStreamsReason(pod: k8s.V1Pod | undefined): string {
  const main = pod?.spec?.containers[0];
  if (main === undefined) return "the pod is gone, so its log cannot be told apart: stderr may be merged into stdout";
  const image = main.image ?? "?";
  if ((main.command ?? []).length === 0) {
    return `stderr is merged into stdout: gavel does not know the program of image ${image} (no spec.runtime.command, no command in its runtime table entry, not an image gavel builds), so its pod ran it without gavel-launch; declare spec.runtime.command to keep them apart`;
  }
  return `stderr is merged into stdout: the pod of image ${image} ran without gavel-launch (the controller has no launcher ConfigMap)`;
}

/** The streams of a pod's log: split when the pod ran under the launcher, else all of it as stdout (stderr merged, "", and why). */
export function podStreams(pod: k8s.V1Pod | undefined, log: string): Streams {
  return isFramed(pod) ? splitFramedLog(log) : { stdout: log, stderr: "", streamsMerged: mergedStreamsReason(pod) };
}

// stdout apart from stderr on Kubernetes: pods/log (1.31) merges a container's two streams, so
// gavel's pods run their program under gavel-launch (src/launcher/gavel-launch.c), copied by an
// init container into an emptyDir, which writes one framed stream. This module is both ends'
// contract: where the launcher lives, the pod parts that install it, and the decoder.
import type * as k8s from "@kubernetes/client-node";

/** Where gavel's launcher image keeps the launcher (src/agent/Dockerfile copies it there). */
export const LAUNCHER_SOURCE = "/opt/gavel/bin/gavel-launch";
/** The emptyDir the init container installs the launcher into, mounted read-only in the main container. */
export const LAUNCHER_DIR = "/gavel-launch";
export const LAUNCHER_PATH = `${LAUNCHER_DIR}/gavel-launch`;
/** Name of the init container (and of its volume). */
export const LAUNCHER_CONTAINER = "gavel-launch";
/** Annotation of a pod whose main container runs under the launcher: its log is framed. */
export const LOG_STREAMS_ANNOTATION = "gavel.dev/log-streams";
export const FRAMED = "framed";

const RS = "\x1e";

/** A program's two output streams. */
export interface Streams {
  stdout: string;
  stderr: string;
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

/** The streams of a pod's log: split when the pod ran under the launcher, else all of it as stdout (stderr merged, ""). */
export function podStreams(pod: k8s.V1Pod | undefined, log: string): Streams {
  return isFramed(pod) ? splitFramedLog(log) : { stdout: log, stderr: "" };
}

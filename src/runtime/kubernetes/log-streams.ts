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
 * Splits a framed log: a line is stdout as written unless it starts with RS (0x1e); then it is a
 * record RS + type + bytes, type O (a stdout line), o (stdout bytes without a newline), E (a
 * stderr line), e (stderr bytes without a newline). A last line without a newline is stdout as
 * it is. A record of an unknown type is kept as stdout, so nothing is ever dropped.
 */
export function splitFramedLog(log: string): Streams {
  let stdout = "";
  let stderr = "";
  let at = 0;
  while (at < log.length) {
    const nl = log.indexOf("\n", at);
    const end = nl < 0 ? log.length : nl;
    const line = log.slice(at, end);
    const newline = nl < 0 ? "" : "\n";
    at = end + 1;
    if (!line.startsWith(RS) || line.length < 2) {
      stdout += line + newline;
      continue;
    }
    const body = line.slice(2);
    switch (line[1]) {
      case "O":
        stdout += `${body}\n`;
        break;
      case "o":
        stdout += body;
        break;
      case "E":
        stderr += `${body}\n`;
        break;
      case "e":
        stderr += body;
        break;
      default:
        stdout += line + newline;
    }
  }
  return { stdout, stderr };
}

/** The streams of a pod's log: split when the pod ran under the launcher, else all of it as stdout (stderr merged, ""). */
export function podStreams(pod: k8s.V1Pod | undefined, log: string): Streams {
  return pod?.metadata?.annotations?.[LOG_STREAMS_ANNOTATION] === FRAMED ? splitFramedLog(log) : { stdout: log, stderr: "" };
}

// Streams a judge's copies out of the worker's running pod (ADR 0041): `tar c` in the worker
// pod's copy source (a sidecar that mounts its claims read-only) piped into `tar x` in the
// judge's stream copier (which mounts only the copies), both through pods/exec. The bytes pass
// through the controller; the source is paused while the sink has more than a few MiB unsent.
// The copier pod's end is the outcome (COPY_SINK_COMMAND leaves tar's code where it waits);
// what this returns is only the source's side, for the message when the copy failed.
import { PassThrough, Writable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { messageOf } from "../errors.js";
import { MAIN_CONTAINER } from "../runtime/kubernetes/pod-spec.js";
import { COPY_SINK_COMMAND, COPY_SOURCE_CONTAINER } from "./execution-pods.js";

/** What this module uses of an exec's websocket (the `ws` package's WebSocket; client-node types it from an untyped module). */
interface Socket {
  readonly bufferedAmount: number;
  pause(): void;
  resume(): void;
  close(): void;
  on(event: "close", listener: () => void): unknown;
}

/** The sink's unsent bytes above which the source is paused, and below which it resumes. */
const HIGH_WATER = 8 * 1024 * 1024;
const LOW_WATER = 1024 * 1024;

/** One copy from a worker pod's copy source into a stream copier. */
export interface WorkspaceStream {
  namespace: string;
  /** The worker's pod (its COPY_SOURCE_CONTAINER runs `command`). */
  sourcePod: string;
  /** copySourceCommand of the copies. */
  command: string[];
  /** The judge's stream copier pod (its main container runs COPY_SINK_COMMAND). */
  copierPod: string;
}

/** What a V1Status from exec says, as an error message; undefined on success. */
function statusProblem(status: k8s.V1Status | undefined): string | undefined {
  if (status === undefined) return "the connection closed before the command's status";
  if (status.status === "Success") return undefined;
  const code = status.details?.causes?.find((c) => c.reason === "ExitCode")?.message;
  return code !== undefined ? `exit ${code}` : (status.message ?? "failed");
}

/** Text a Writable collects, keeping the last `max` bytes. */
function tail(max: number): { stream: Writable; text: () => string } {
  let kept = Buffer.alloc(0);
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      kept = Buffer.concat([kept, chunk]);
      if (kept.length > max) kept = kept.subarray(kept.length - max);
      done();
    },
  });
  return { stream, text: () => kept.toString("utf8").trim() };
}

/**
 * Runs one stream copy to its end. Resolves with why the source failed (its exit and stderr),
 * or undefined when it sent the whole tar (the sink's outcome is the copier pod's).
 */
export async function streamWorkspace(kc: k8s.KubeConfig, s: WorkspaceStream): Promise<string | undefined> {
  const exec = new k8s.Exec(kc);
  const pipe = new PassThrough();
  let sink: Socket | undefined;
  let source: Socket | undefined;
  let waiting: NodeJS.Timeout | undefined;
  // The source's stdout: into the sink's stdin, the source paused while the sink lags.
  const relay = new Writable({
    write(chunk: Buffer, _enc, done) {
      pipe.write(chunk);
      if (waiting === undefined && source !== undefined && (sink?.bufferedAmount ?? 0) > HIGH_WATER) {
        source.pause();
        waiting = setInterval(() => {
          if ((sink?.bufferedAmount ?? 0) > LOW_WATER) return;
          clearInterval(waiting);
          waiting = undefined;
          source?.resume();
        }, 20);
      }
      done();
    },
    final(done) {
      pipe.end();
      done();
    },
  });
  const sinkDone = new Promise<void>((resolve) => {
    exec.exec(s.namespace, s.copierPod, MAIN_CONTAINER, COPY_SINK_COMMAND, null, null, pipe, false, () => resolve()).then((ws: unknown) => {
      sink = ws as Socket;
      sink.on("close", () => resolve());
    }, () => resolve());
  });
  // A sink that ended (or could not start) stops the source.
  void sinkDone.then(() => source?.close());
  const sourceErr = tail(2000);
  let problem: string | undefined;
  try {
    const status = await new Promise<k8s.V1Status | undefined>((resolve, reject) => {
      exec.exec(s.namespace, s.sourcePod, COPY_SOURCE_CONTAINER, s.command, relay, sourceErr.stream, null, false, resolve).then((ws: unknown) => {
        source = ws as Socket;
        source.on("close", () => resolve(undefined));
      }, reject);
    });
    problem = statusProblem(status);
  } catch (err) {
    problem = messageOf(err);
  } finally {
    if (waiting !== undefined) clearInterval(waiting);
    // The sink gets EOF either way: a cut tar fails its extraction.
    if (!pipe.writableEnded) pipe.end();
  }
  await sinkDone;
  return problem === undefined ? undefined : `tar in ${s.sourcePod}'s ${COPY_SOURCE_CONTAINER}: ${problem}${sourceErr.text() !== "" ? `: ${sourceErr.text()}` : ""}`;
}

// Streams a judge's copies out of the worker's running pod (ADR 0041, 0044): `tar c` in the
// worker pod's copy source (a sidecar that mounts its claims read-only) piped into `tar x` in the
// judge's stream copier (which mounts only the copies), both through pods/exec. The bytes pass
// through the controller; the source is paused while the sink has more than a few MiB unsent.
// An attempt counts only when both sides exited 0; then the controller commits the copy in the
// copier (COPY_COMMIT_SCRIPT), whose program exits with the committed code, so the copier pod's
// end stays the outcome. An attempt cut short (by this controller dying, or the connection)
// commits nothing: the next one, here or in the controller that takes over, starts from the start.
import { PassThrough, Writable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { backoffDelay, sleep } from "../backoff.js";
import { messageOf } from "../errors.js";
import { MAIN_CONTAINER } from "../runtime/kubernetes.js";
import { COPY_SINK_COMMAND, COPY_SOURCE_CONTAINER, copyCommitCommand } from "./execution-pods.js";

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

/** How one exec ended: its exit code, or why that is not known (it could not start, or its connection closed first). */
export type ExecEnd = { code: number } | { problem: string };

/** One attempt's two sides, and the tail of what the source printed on stderr. */
export interface StreamAttempt {
  source: ExecEnd;
  sink: ExecEnd;
  sourceErr: string;
}

/** What a V1Status from exec says as an ExecEnd (undefined: the connection closed before it). */
export function execEndOf(status: k8s.V1Status | undefined): ExecEnd {
  if (status === undefined) return { problem: "the connection closed before the command's status" };
  if (status.status === "Success") return { code: 0 };
  const code = Number(status.details?.causes?.find((c) => c.reason === "ExitCode")?.message);
  return Number.isInteger(code) ? { code } : { problem: status.message ?? "failed" };
}

/** An attempt's ExecEnds in words, for the copy's failure message. */
export function attemptProblem(a: StreamAttempt, sourcePod: string): string | undefined {
  const side = (e: ExecEnd) => ("problem" in e ? e.problem : e.code === 0 ? undefined : `exit ${e.code}`);
  const source = side(a.source);
  const sink = side(a.sink);
  const parts = [
    ...(source !== undefined
      ? [`tar in ${sourcePod}'s ${COPY_SOURCE_CONTAINER}: ${source}${a.sourceErr !== "" ? `: ${a.sourceErr}` : ""}`]
      : []),
    ...(sink !== undefined ? [`tar x in the copier: ${sink}`] : []),
  ];
  return parts.length === 0 ? undefined : parts.join("; ");
}

/**
 * What follows an attempt (pure): commit 0 when both sides exited 0; another attempt while
 * `attempt` < `attempts`; else commit the sink's code (1 when it has none) with why.
 */
export function afterAttempt(
  a: StreamAttempt,
  sourcePod: string,
  attempt: number,
  attempts: number,
): { commit: 0 } | { commit: number; problem: string } | { retry: string } {
  const problem = attemptProblem(a, sourcePod);
  if (problem === undefined) return { commit: 0 };
  if (attempt < attempts) return { retry: problem };
  const code = "code" in a.sink && a.sink.code !== 0 ? a.sink.code : 1;
  return { commit: code, problem };
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

/** Runs one exec with stdin/stdout as given; resolves with how it ended, and hands its socket over once open. */
export function runExec(
  exec: k8s.Exec,
  target: { namespace: string; pod: string; container: string; command: string[] },
  io: { stdout: Writable | null; stderr: Writable | null; stdin: PassThrough | null },
  opened: (ws: Socket) => void = () => undefined,
): Promise<ExecEnd> {
  return new Promise<ExecEnd>((resolve) => {
    exec
      .exec(target.namespace, target.pod, target.container, target.command, io.stdout, io.stderr, io.stdin, false, (status) =>
        resolve(execEndOf(status)),
      )
      .then(
        (ws: unknown) => {
          opened(ws as Socket);
          (ws as Socket).on("close", () => resolve(execEndOf(undefined)));
        },
        (err: unknown) => resolve({ problem: messageOf(err) }),
      );
  });
}

/** One attempt: the source's tar into the sink's stdin, to both ends. */
export async function streamAttempt(kc: k8s.KubeConfig, s: WorkspaceStream): Promise<StreamAttempt> {
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
  const sinkEnd = runExec(
    exec,
    { namespace: s.namespace, pod: s.copierPod, container: MAIN_CONTAINER, command: COPY_SINK_COMMAND },
    { stdout: null, stderr: null, stdin: pipe },
    (ws) => (sink = ws),
  );
  // A sink that ended (or could not start) stops the source.
  void sinkEnd.then(() => source?.close());
  const sourceErr = tail(2000);
  const sourceEnd = await runExec(
    exec,
    { namespace: s.namespace, pod: s.sourcePod, container: COPY_SOURCE_CONTAINER, command: s.command },
    { stdout: relay, stderr: sourceErr.stream, stdin: null },
    (ws) => (source = ws),
  );
  if (waiting !== undefined) clearInterval(waiting);
  // The sink gets EOF either way: a cut tar fails its extraction (and nothing is committed).
  if (!pipe.writableEnded) pipe.end();
  return { source: sourceEnd, sink: await sinkEnd, sourceErr: sourceErr.text() };
}

/** Commits a stream copy in its copier with exit code `code` (COPY_COMMIT_SCRIPT); how that exec ended. */
export async function commitCopy(kc: k8s.KubeConfig, namespace: string, copierPod: string, code: number): Promise<ExecEnd> {
  // An exec needs at least one stream: stderr, for why it failed.
  const err = tail(2000);
  const end = await runExec(
    new k8s.Exec(kc),
    { namespace, pod: copierPod, container: MAIN_CONTAINER, command: copyCommitCommand(code) },
    { stdout: null, stderr: err.stream, stdin: null },
  );
  return "code" in end && end.code !== 0 && err.text() !== "" ? { problem: `exit ${end.code}: ${err.text()}` } : end;
}

/** Attempts and the pause between them of copyWorkspace. */
export interface CopyRetry {
  attempts: number;
  pauseMs: number;
}

/**
 * Copies a worker pod's volumes into a stream copier: attempts until one succeeds (or the last
 * failed), then commits its outcome (retrying the commit as often). Resolves with why the copy
 * failed, or why it could not be committed (the copier then waits out its deadline); undefined
 * when committed 0.
 */
export async function copyWorkspace(
  kc: k8s.KubeConfig,
  s: WorkspaceStream,
  retry: CopyRetry = { attempts: 3, pauseMs: 1000 },
): Promise<string | undefined> {
  const pause = (failures: number) => sleep(backoffDelay(failures, { initialMs: retry.pauseMs, maxMs: retry.pauseMs * 8 }));
  let next: { commit: number; problem?: string } | { retry: string } = { retry: "" };
  for (let attempt = 1; "retry" in next; attempt++) {
    if (attempt > 1) await pause(attempt - 1);
    next = afterAttempt(await streamAttempt(kc, s), s.sourcePod, attempt, retry.attempts);
  }
  let committed: ExecEnd = { problem: "not tried" };
  for (let attempt = 1; attempt <= retry.attempts; attempt++) {
    if (attempt > 1) await pause(attempt - 1);
    committed = await commitCopy(kc, s.namespace, s.copierPod, next.commit);
    if ("code" in committed && committed.code === 0) return next.problem;
  }
  const why = "problem" in committed ? committed.problem : `exit ${committed.code}`;
  return `${next.problem !== undefined ? `${next.problem}; ` : ""}the copy's commit in ${s.copierPod} failed: ${why}`;
}

// `gavel logs EXEC`: the output of an Execution's worker (the current iteration, or
// --iteration N) or of one of its judges (--judge NAME: the judge Agent or the child's
// name), from the live pod or from what the controller kept once the pod was gone (for a
// judge, else the tails its status keeps). With -f
// it follows the pod's log, and for a worker goes on with the next iterations until the
// Execution ends. Naming a judge child Execution itself prints that judge's output.
import type { Execution, JudgeRawOutput } from "../api/types.js";
import { workerName } from "../engine/child-names.js";
import { ExitCode, UsageError, type Command, type CommandIO } from "./command.js";
import { isFinished } from "../views/execution-view.js";
import { NotFoundError } from "../errors.js";
import { parseFlags } from "./flags.js";
import { childrenOf, connectKube, getObject, KUBE_FLAGS, type Kube } from "../views/kube.js";
import { followPodLog, podState, workloadOutput } from "./outputs.js";
import { EXECUTIONS } from "../views/resources.js";

const POLL_MS = 1000;

const FLAGS = {
  ...KUBE_FLAGS,
  iteration: { type: "string" },
  judge: { type: "string" },
  follow: { type: "boolean", short: "f", default: false },
} as const;

/**
 * Waits `ms`, or less when `signal` aborts. Its abort listener goes when the wait ends: -f polls
 * once a second on one signal, and listeners left behind made Node warn (MaxListenersExceeded)
 * after ten polls.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The judge child `name` designates among an Execution's children: by child name, else by judge Agent (latest iteration). */
export function pickJudge(children: Execution[], name: string, iteration: number | undefined): Execution | undefined {
  const inIteration = children.filter((c) => iteration === undefined || c.spec.parent?.iteration === iteration);
  const exact = inIteration.find((c) => c.metadata.name === name);
  if (exact !== undefined) return exact;
  const byJudge = inIteration.filter((c) => c.spec.agentRef.name === name);
  byJudge.sort(
    (a, b) =>
      (a.spec.parent?.iteration ?? 0) - (b.spec.parent?.iteration ?? 0) ||
      (a.spec.parent?.validatorIndex ?? 0) - (b.spec.parent?.validatorIndex ?? 0),
  );
  return byJudge[byJudge.length - 1];
}

/** Prints one workload's output once (stored, else the pod's log so far); false when there is none yet. */
async function printOnce(kube: Kube, namespace: string, workload: string, io: CommandIO): Promise<boolean> {
  const out = await workloadOutput(kube, namespace, workload);
  if (out === undefined) return false;
  io.stdout.write(out.stdout);
  if (out.stderr !== "") io.stderr.write(out.stderr.endsWith("\n") ? out.stderr : `${out.stderr}\n`);
  return true;
}

/**
 * Follows one workload: waits for its pod to run, streams its log until it ends; a run that
 * already ended prints what was kept. Returns false when the run never produced output
 * before `gone()` said it will not (the Execution ended without it).
 */
async function follow(
  kube: Kube,
  namespace: string,
  workload: string,
  io: CommandIO,
  signal: AbortSignal,
  gone: () => Promise<boolean>,
): Promise<boolean> {
  while (!signal.aborted) {
    const state = await podState(kube, namespace, workload);
    if (state === "running") {
      await followPodLog(kube, namespace, workload, io.stdout, signal, io.stderr);
      return true;
    }
    if (state === "ended" || state === "absent") {
      if (await printOnce(kube, namespace, workload, io)) return true;
      if (state === "absent" && (await gone())) return false;
    }
    await sleep(POLL_MS, signal);
  }
  return true;
}

/** The judge child whose output to show: the named Execution itself, or --judge among its children. */
async function judgeChild(kube: Kube, ex: Execution, judge: string | undefined, iteration: number | undefined): Promise<Execution> {
  if (judge === undefined) return ex;
  const name = ex.metadata.name;
  const children = await childrenOf(kube, kube.namespace, name);
  const found = pickJudge(children, judge, iteration);
  if (found !== undefined) return found;
  const known = children.map((c) => `${c.metadata.name} (${c.spec.agentRef.name}, iteration ${c.spec.parent?.iteration ?? "?"})`);
  throw new NotFoundError(
    `no judge "${judge}"${iteration !== undefined ? ` in iteration ${iteration}` : ""} among the children of execution "${name}"${known.length > 0 ? `; it has ${known.join(", ")}` : "; it has no judge children"}`,
  );
}

/**
 * A judge's output from the tails its status keeps (status.rawOutput), when neither its pod
 * nor a stored result has it: stdout to stdout, stderr to stderr, and on stderr what is
 * missing (the start of a long stdout) or merged (stderr in stdout, when its pod log merged them).
 */
export function printKeptOutput(raw: JudgeRawOutput, io: Pick<CommandIO, "stdout" | "stderr">): void {
  io.stdout.write(raw.stdout);
  io.stderr.write(raw.stderr);
  const kept = Buffer.byteLength(raw.stdout);
  if (raw.stdoutBytes > kept)
    io.stderr.write(
      `gavel logs: the first ${raw.stdoutBytes - kept} of ${raw.stdoutBytes} bytes of stdout were not kept (the judge's status keeps its end)\n`,
    );
  else if (raw.truncated) io.stderr.write("gavel logs: only the end of stderr was kept\n");
  if (raw.streamsMerged !== undefined) io.stderr.write(`gavel logs: ${raw.streamsMerged}\n`);
}

/** Why a judge child has no output: its verdict, its rejection, or its phase. */
function judgeWithoutOutput(child: Execution): string {
  const st = child.status;
  if (st?.verdict !== undefined) return `its verdict: score ${st.verdict.score.toFixed(2)}, confidence ${st.verdict.confidence.toFixed(2)}`;
  if (st?.rejection !== undefined) return `it was rejected (${st.rejection}): ${st.message ?? ""}`;
  return `its phase: ${st?.phase ?? "Pending"}`;
}

/** Prints (or with -f follows) a judge child's output. */
async function judgeLogs(kube: Kube, child: Execution, follows: boolean, io: CommandIO, signal: AbortSignal): Promise<number> {
  const ns = kube.namespace;
  const childName = child.metadata.name;
  const done = async () => isFinished((await getObject<Execution>(kube, EXECUTIONS, ns, childName)).status?.phase);
  const printed = follows ? await follow(kube, ns, childName, io, signal, done) : await printOnce(kube, ns, childName, io);
  if (printed) return ExitCode.ok;
  if (child.status?.rawOutput !== undefined) {
    printKeptOutput(child.status.rawOutput, io);
    return ExitCode.ok;
  }
  throw new NotFoundError(`judge child "${childName}" has no output to show (no pod, nothing kept); ${judgeWithoutOutput(child)}`);
}

/** Waits until the run has iteration `next` (true) or has ended or was stopped (false). */
async function nextIteration(kube: Kube, name: string, next: number, signal: AbortSignal): Promise<boolean> {
  for (;;) {
    const now = await getObject<Execution>(kube, EXECUTIONS, kube.namespace, name);
    if ((now.status?.iterations ?? []).some((r) => r.number === next)) return true;
    if (isFinished(now.status?.phase) || signal.aborted) return false;
    await sleep(POLL_MS, signal);
  }
}

/** Follows the worker from iteration `first`; unless `only`, goes on with the iterations after it until the run ends. */
async function followWorker(kube: Kube, name: string, first: number, only: boolean, io: CommandIO, signal: AbortSignal): Promise<number> {
  for (let n = first; ; n++) {
    const current = n;
    const finishedWithout = async () => {
      const now = await getObject<Execution>(kube, EXECUTIONS, kube.namespace, name);
      return isFinished(now.status?.phase) || (now.status?.iterations ?? []).some((r) => r.number > current);
    };
    if (n !== first) io.stderr.write(`--- iteration ${n}\n`);
    await follow(kube, kube.namespace, workerName(name, n), io, signal, finishedWithout);
    if (only || signal.aborted) return ExitCode.ok;
    if (!(await nextIteration(kube, name, n + 1, signal))) return ExitCode.ok;
  }
}

/** The worker's output: the chosen iteration, or the current one (and with -f the ones after it). */
async function workerLogs(
  kube: Kube,
  ex: Execution,
  iteration: number | undefined,
  follows: boolean,
  io: CommandIO,
  signal: AbortSignal,
): Promise<number> {
  const name = ex.metadata.name;
  const last = ex.status?.iterations?.at(-1)?.number;
  if (iteration !== undefined && (last === undefined || iteration > last) && !follows) {
    throw new NotFoundError(
      `execution "${name}" has no iteration ${iteration}${last === undefined ? " (it has not started one)" : ` (it has 1 to ${last})`}`,
    );
  }
  const n = iteration ?? last ?? 1;
  if (follows) return followWorker(kube, name, n, iteration !== undefined, io, signal);
  if (await printOnce(kube, kube.namespace, workerName(name, n), io)) return ExitCode.ok;
  throw new NotFoundError(`the worker of execution "${name}" iteration ${n} has no output yet (its pod has not started)`);
}

export const logsCommand: Command = {
  name: "logs",
  summary: "print a worker's or a judge's output (--iteration N, --judge NAME, -f)",
  usage: "gavel logs EXECUTION [--iteration N] [--judge NAME] [-f] [-n NS] [--kubeconfig FILE] [--context NAME]",
  async run(argv, io) {
    const { values, positionals } = parseFlags({ args: argv, allowPositionals: true, options: FLAGS });
    const [name, ...extra] = positionals;
    if (name === undefined) throw new UsageError("name an EXECUTION");
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0] ?? ""}"`);
    const iteration = values.iteration === undefined ? undefined : Number(values.iteration);
    if (iteration !== undefined && (!Number.isInteger(iteration) || iteration < 1))
      throw new UsageError(`--iteration must be a whole number from 1, not "${values.iteration}"`);
    const kube = connectKube(values, io);
    const ex = await getObject<Execution>(kube, EXECUTIONS, kube.namespace, name);
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    try {
      // A judge: --judge among the children, or the named Execution is a judge child itself.
      if (values.judge !== undefined || ex.spec.parent !== undefined)
        return await judgeLogs(kube, await judgeChild(kube, ex, values.judge, iteration), values.follow, io, stop.signal);
      return await workerLogs(kube, ex, iteration, values.follow, io, stop.signal);
    } finally {
      process.off("SIGINT", onSignal);
    }
  },
};

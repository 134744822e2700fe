// `gavel logs EXEC`: the output of an Execution's worker (the current iteration, or
// --iteration N) or of one of its judges (--judge NAME: the judge Agent or the child's
// name), from the live pod or from what the controller kept once the pod was gone. With -f
// it follows the pod's log, and for a worker goes on with the next iterations until the
// Execution ends. Naming a judge child Execution itself prints that judge's output.
import type { Execution } from "../api/types.js";
import { workerName } from "../engine/child-names.js";
import { ExitCode, UsageError, type Command, type CommandIO } from "./command.js";
import { isFinished } from "./execution-view.js";
import { NotFoundError } from "../errors.js";
import { parseFlags } from "./flags.js";
import { childrenOf, connectKube, getObject, KUBE_FLAGS, type Kube } from "./kube.js";
import { followPodLog, podState, workloadOutput } from "./outputs.js";
import { EXECUTIONS } from "./resources.js";

const POLL_MS = 1000;

const FLAGS = {
  ...KUBE_FLAGS,
  iteration: { type: "string" },
  judge: { type: "string" },
  follow: { type: "boolean", short: "f", default: false },
} as const;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });
}

/** The judge child `name` designates among an Execution's children: by child name, else by judge Agent (latest iteration). */
export function pickJudge(children: Execution[], name: string, iteration: number | undefined): Execution | undefined {
  const inIteration = children.filter((c) => iteration === undefined || c.spec.parent?.iteration === iteration);
  const exact = inIteration.find((c) => c.metadata.name === name);
  if (exact !== undefined) return exact;
  const byJudge = inIteration.filter((c) => c.spec.agentRef.name === name);
  byJudge.sort((a, b) => (a.spec.parent?.iteration ?? 0) - (b.spec.parent?.iteration ?? 0) || (a.spec.parent?.validatorIndex ?? 0) - (b.spec.parent?.validatorIndex ?? 0));
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
async function follow(kube: Kube, namespace: string, workload: string, io: CommandIO, signal: AbortSignal, gone: () => Promise<boolean>): Promise<boolean> {
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

export const logsCommand: Command = {
  name: "logs",
  summary: "print a worker's or a judge's output (--iteration N, --judge NAME, -f)",
  usage: "gavel logs EXECUTION [--iteration N] [--judge NAME] [-f] [-n NS] [--kubeconfig FILE] [--context NAME]",
  // eslint-disable-next-line complexity -- larger than the limits (complexity 49); to split (issue 9)
  async run(argv, io) {
    const { values, positionals } = parseFlags({ args: argv, allowPositionals: true, options: FLAGS });
    const [name, ...extra] = positionals;
    if (name === undefined) throw new UsageError("name an EXECUTION");
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0] ?? ""}"`);
    const iteration = values.iteration === undefined ? undefined : Number(values.iteration);
    if (iteration !== undefined && (!Number.isInteger(iteration) || iteration < 1)) throw new UsageError(`--iteration must be a whole number from 1, not "${values.iteration}"`);
    const kube = connectKube(values, io);
    const ns = kube.namespace;
    const ex = await getObject<Execution>(kube, EXECUTIONS, ns, name);

    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    try {
      // A judge: --judge among the children, or the named Execution is a judge child itself.
      if (values.judge !== undefined || ex.spec.parent !== undefined) {
        let child = ex;
        if (values.judge !== undefined) {
          const children = await childrenOf(kube, ns, name);
          const found = pickJudge(children, values.judge, iteration);
          if (found === undefined) {
            const known = children.map((c) => `${c.metadata.name} (${c.spec.agentRef.name}, iteration ${c.spec.parent?.iteration ?? "?"})`);
            throw new NotFoundError(`no judge "${values.judge}"${iteration !== undefined ? ` in iteration ${iteration}` : ""} among the children of execution "${name}"${known.length > 0 ? `; it has ${known.join(", ")}` : "; it has no judge children"}`);
          }
          child = found;
        }
        const childName = child.metadata.name;
        const done = async () => isFinished((await getObject<Execution>(kube, EXECUTIONS, ns, childName)).status?.phase);
        const printed = values.follow ? await follow(kube, ns, childName, io, stop.signal, done) : await printOnce(kube, ns, childName, io);
        if (printed) return ExitCode.ok;
        const st = child.status;
        const what = st?.verdict !== undefined ? `its verdict: score ${st.verdict.score.toFixed(2)}, confidence ${st.verdict.confidence.toFixed(2)}` : st?.rejection !== undefined ? `it was rejected (${st.rejection}): ${st.message ?? ""}` : `its phase: ${st?.phase ?? "Pending"}`;
        throw new NotFoundError(`judge child "${childName}" has no output to show (no pod, nothing kept); ${what}`);
      }

      // The worker: the chosen iteration, or the current one (and with -f the ones after it).
      const records = ex.status?.iterations ?? [];
      const last = records.length === 0 ? undefined : records[records.length - 1]?.number;
      if (iteration !== undefined && (last === undefined || iteration > last) && !values.follow) {
        throw new NotFoundError(`execution "${name}" has no iteration ${iteration}${last === undefined ? " (it has not started one)" : ` (it has 1 to ${last})`}`);
      }
      let n = iteration ?? last ?? 1;
      if (!values.follow) {
        if (await printOnce(kube, ns, workerName(name, n), io)) return ExitCode.ok;
        throw new NotFoundError(`the worker of execution "${name}" iteration ${n} has no output yet (its pod has not started)`);
      }
      for (;;) {
        const current = n;
        const finishedWithout = async () => {
          const now = await getObject<Execution>(kube, EXECUTIONS, ns, name);
          const its = now.status?.iterations ?? [];
          return isFinished(now.status?.phase) || its.some((r) => r.number > current);
        };
        if (n !== (iteration ?? last ?? 1)) io.stderr.write(`--- iteration ${n}\n`);
        await follow(kube, ns, workerName(name, n), io, stop.signal, finishedWithout);
        if (iteration !== undefined || stop.signal.aborted) return ExitCode.ok;
        // Wait for the next iteration, or the end of the run.
        for (;;) {
          const now = await getObject<Execution>(kube, EXECUTIONS, ns, name);
          if ((now.status?.iterations ?? []).some((r) => r.number === n + 1)) break;
          if (isFinished(now.status?.phase) || stop.signal.aborted) return ExitCode.ok;
          await sleep(POLL_MS, stop.signal);
        }
        n += 1;
      }
    } finally {
      process.off("SIGINT", onSignal);
    }
  },
};

// `gavel replay`: a run's recorded tool calls put through a candidate GuardPolicy with the guard
// alone (issue 25 item 5, ADR 0076), printing which decisions would change and why. The calls
// come from the tool-call store on NATS or from a `gavel audit export` file; nothing is sent to a
// tool, no judge is run, nothing on the cluster changes.
import { resolve } from "node:path";
import type { Agent, GuardPolicy } from "../api/types.js";
import { DEFAULT_GUARD_POLICY } from "../api/types.js";
import { messageOf } from "../errors.js";
import { compilePolicy, PolicyError, type CompiledPolicy, type NamedPolicy } from "../gate/guard.js";
import { outcomeText, replayCalls, type ReplayedCall } from "../gate/replay.js";
import { GUARD_POLICIES } from "../views/resources.js";
import { findObject, listObjects, type Kube } from "../views/kube.js";
import { renderTable, oneLine } from "../views/table.js";
import { ExitCode, UsageError, type Command, type CommandIO } from "./command.js";
import { parseFlags } from "./flags.js";
import { readAgent, readPolicies } from "./manifests.js";
import { loadRun, RUN_SOURCE_FLAGS } from "./recorded-runs.js";

const USAGE = [
  "gavel replay EXECUTION --policy FILE... [-n NS] --nats URL [--nats-creds FILE] [--run UID] [--agent FILE] [--policy-only] [--controller-namespace NS] [--all] [-o json]",
  "gavel replay --from FILE --policy FILE... [--agent FILE] [--all] [-o json]",
].join("\n       ");

/** The candidate GuardPolicies of the --policy files, each compiled on its own first so a policy that does not compile is named with its file. */
async function candidates(files: string[], cwd: string): Promise<NamedPolicy[]> {
  if (files.length === 0) throw new UsageError("--policy FILE is required: the candidate GuardPolicy (as you would kubectl apply it)");
  const out: NamedPolicy[] = [];
  for (const file of files) {
    const policies = await readPolicies(resolve(cwd, file), file);
    try {
      compilePolicy(policies);
    } catch (err) {
      if (err instanceof PolicyError) throw new UsageError(`--policy ${file}: ${err.message}`);
      throw err;
    }
    out.push(...policies);
  }
  return out;
}

/**
 * The policies a replayed call meets: the candidates in place of the cluster's policies of the
 * same name (the run's namespace, or the controller namespace's `default`), beside the others in force.
 */
async function inForce(
  kube: Kube,
  namespace: string,
  controllerNamespace: string,
  chosen: NamedPolicy[],
  io: CommandIO,
): Promise<NamedPolicy[]> {
  const named = (p: GuardPolicy): NamedPolicy => ({
    name: p.metadata.name,
    namespace: p.metadata.namespace ?? namespace,
    spec: p.spec ?? {},
  });
  const cluster: NamedPolicy[] = [];
  try {
    cluster.push(...(await listObjects<GuardPolicy>(kube, GUARD_POLICIES, namespace)).items.map(named));
  } catch (err) {
    throw new Error(
      `cannot read the GuardPolicies in force in ${namespace} (give --policy-only to replay against the --policy files alone): ${messageOf(err)}`,
      { cause: err },
    );
  }
  if (namespace !== controllerNamespace) {
    try {
      const d = await findObject<GuardPolicy>(kube, GUARD_POLICIES, controllerNamespace, DEFAULT_GUARD_POLICY);
      if (d !== undefined) cluster.push(named(d));
    } catch (err) {
      // A namespace's viewer often cannot read the controller's namespace: said, not fatal.
      io.stderr.write(
        `gavel replay: warning: the cluster default GuardPolicy ${controllerNamespace}/${DEFAULT_GUARD_POLICY} cannot be read, replayed without it (give it as a --policy file if it exists): ${messageOf(err)}\n`,
      );
    }
  }
  const key = (p: NamedPolicy): string =>
    p.name === DEFAULT_GUARD_POLICY ? DEFAULT_GUARD_POLICY : `${p.namespace ?? namespace}/${p.name}`;
  const replaced = new Set(chosen.map(key));
  return [...cluster.filter((p) => !replaced.has(key(p))), ...chosen];
}

/** Compiled as the gate's PolicyStore compiles a namespace's policies: `default` first. */
function compiled(policies: NamedPolicy[]): CompiledPolicy {
  const ordered = [...policies.filter((p) => p.name === DEFAULT_GUARD_POLICY), ...policies.filter((p) => p.name !== DEFAULT_GUARD_POLICY)];
  try {
    return compilePolicy(ordered);
  } catch (err) {
    if (err instanceof PolicyError) throw new UsageError(`the policies together do not compile: ${err.message}`);
    throw err;
  }
}

/** The table of replayed calls: the changed ones, or all with --all. */
export function replayTable(calls: readonly ReplayedCall[], all: boolean): string {
  const shown = calls.filter((c) => all || c.changed);
  return renderTable(
    ["ITER", "STEP", "TOOL", "RECORDED", "REPLAYED", ...(all ? ["CHANGED"] : []), "WHY"],
    shown.map((c) => [
      String(c.iteration),
      String(c.step),
      c.tool,
      outcomeText(c.recorded),
      outcomeText(c.replayed),
      ...(all ? [c.changed ? "yes" : "no"] : []),
      oneLine(c.why, 160),
    ]),
  );
}

async function run(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: {
      ...RUN_SOURCE_FLAGS,
      policy: { type: "string", multiple: true, default: [] },
      agent: { type: "string" },
      "policy-only": { type: "boolean", default: false },
      "controller-namespace": { type: "string", default: "gavel-system" },
      all: { type: "boolean", default: false },
      output: { type: "string", short: "o" },
    },
  });
  if (positionals.length > 1) throw new UsageError(`one Execution at a time (got ${positionals.join(", ")})`);
  if (values.output !== undefined && values.output !== "json") throw new UsageError(`-o must be json, not "${values.output}"`);
  const chosen = await candidates(values.policy, io.cwd);
  const loaded = await loadRun(values, positionals[0], io);
  const { header } = loaded;
  let agent: Pick<Agent, "spec">;
  if (values.agent !== undefined) agent = await readAgent(resolve(io.cwd, values.agent));
  else if (header.agent !== undefined) agent = { spec: header.agent.spec };
  else throw new UsageError(`the run ${header.namespace}/${header.execution} names no Agent that can be read: give --agent FILE`);
  const policies =
    loaded.kube !== undefined && !values["policy-only"]
      ? await inForce(loaded.kube, header.namespace, values["controller-namespace"], chosen, io)
      : chosen;
  const replayed = replayCalls(loaded.calls, { agent, policy: compiled(policies) });
  const changed = replayed.filter((c) => c.changed).length;
  if (values.output === "json") {
    io.stdout.write(
      `${JSON.stringify({ namespace: header.namespace, execution: header.execution, run: header.run, replayed: replayed.length, changed, calls: replayed })}\n`,
    );
    return ExitCode.ok;
  }
  const against =
    values.policy.join(", ") + (loaded.kube !== undefined && !values["policy-only"] ? " with the other GuardPolicies in force" : "");
  io.stdout.write(
    `Replayed ${replayed.length} recorded call${replayed.length === 1 ? "" : "s"} of ${header.namespace}/${header.execution} (run ${header.run}) against ${against}: the guard only, judges not re-run, no tool called.\n`,
  );
  io.stdout.write(changed === 0 ? "No decision would change.\n" : `${changed} decision${changed === 1 ? "" : "s"} would change:\n`);
  if (changed > 0 || (values.all && replayed.length > 0)) io.stdout.write(replayTable(replayed, values.all));
  return ExitCode.ok;
}

export const replayCommand: Command = {
  name: "replay",
  summary: "replay a run's recorded tool calls against a candidate GuardPolicy (guard only) and print which decisions would change",
  usage: USAGE,
  run,
};

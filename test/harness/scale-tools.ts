// The tool-calling variant of the scale harness (docs/scale.md, issue 24 item 1): NATS with
// JetStream in operator mode as the chart runs it (`gavel nats bootstrap`'s keys, the
// controller minting each worker's credential into a Secret), and the worker's part that a
// kwok pod cannot run: while its pod runs, the worker's three tool calls, sent by the worker
// runtime's own code (its config read from the pod's env, its credential from the Secret the
// pod mounts, its gate dial and ToolCallClient), after which the pod's program ends. The
// decisions are counted in the JetStream store, as the soak counts them.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import type { ToolCallDecision, ToolCallProposal } from "../../src/api/protocol.js";
import { readAgentConfig } from "../../src/agent/config.js";
import { connectGate } from "../../src/agent/gate-dial.js";
import { gateBudgetEnd } from "../../src/agent/gate-connection.js";
import { builtinToolFiles } from "../../src/agent/builtin-tools.js";
import { ToolCodeHasher } from "../../src/gate/tool-code.js";
import { DECISION_SUBJECT_PREFIX, type ToolCallRecord } from "../../src/gate/tool-call.js";
import { buildToolCallPayload } from "../../src/engine/judge-payload.js";
import { ToolCallClient } from "../../src/transport/tool-call-client.js";
import { token } from "../../src/transport/subjects.js";
import { toolJudgeChildName } from "../../src/engine/child-names.js";
import { workloadPodName } from "../../src/controller/execution-pods.js";
import { Informer, podResource } from "../../src/controller/runtime/informer.js";
import { LABELS } from "../../src/runtime/kubernetes/pod-spec.js";
import type { Agent } from "../../src/api/types.js";
import { messageOf } from "../../src/errors.js";
import type { ControlPlane } from "./control-plane.js";
import { watchDecisionRecords, type RecordWatch } from "./decision-records.js";
import { eventually, sleep } from "./eventually.js";
import { run, runOk } from "./exec.js";
import { startNats, type NatsServer } from "./nats.js";
import { REPO_DIR } from "./paths.js";

/** The annotation the harness sets on a worker pod once its program has made its calls: kwok's Stage then ends the pod (kwok-stages.ts). */
export const PROGRAM_ENDED = "scale.gavel.dev/program-ended";

/** The tool-call judge (the shipped rule judge's Agent). */
const TOOL_JUDGE = "rule-judge";

/** What each worker calls, in order: a call the guard blocks, one that skips judges (allowed), one the rule judge judges. */
export const TOOL_CALLS: { tool: string; args: Record<string, string>; expect: "guard" | "allowed" | "judged" }[] = [
  { tool: "cmd.run", args: { command: "rm -rf /" }, expect: "guard" },
  { tool: "fs.read", args: { path: "/workspace/report.md" }, expect: "allowed" },
  { tool: "fs.write", args: { path: "/workspace/report.md", content: "status: done" }, expect: "judged" },
];

/** The step of the judged call (1-based). */
const JUDGED_STEP = TOOL_CALLS.findIndex((c) => c.expect === "judged") + 1;

/** The worker Agent's spec lines of the tools variant (under spec:), indented two spaces. */
export const TOOL_SPEC = `  tools:
    - fs.list
    - fs.read
    - fs.write
    - name: cmd.run
      allowlist: ["ls"]
`;

/** The worker Agent's execution lines of the tools variant (under execution:), indented four spaces. */
export const TOOL_VALIDATION = `    tool_validation:
      - type: semantic
        judge_agent: ${TOOL_JUDGE}
        min_score: 0.6
        min_confidence: 0.5
`;

/** The GuardPolicy (examples/guarded-tools') and the rule judge's Agent, as files of the repository. */
export async function toolManifests(): Promise<string> {
  const policy = await readFile(join(REPO_DIR, "examples", "guarded-tools", "policy.yaml"), "utf8");
  const judge = await readFile(join(REPO_DIR, "judges", "rule-judge", "agent.yaml"), "utf8");
  return `${policy}\n---\n${judge}`;
}

/** The pod of execution's tool-call judge. */
export function toolJudgePod(execution: string): string {
  return workloadPodName(toolJudgeChildName(execution, 1, 0, JUDGED_STEP, TOOL_JUDGE));
}

/**
 * What the tool-call judge's pod prints: the real rule judge under the real gavel-launch, given
 * the payload the gate gives it (buildToolCallPayload, as the gate builds it, for the judged call).
 */
export async function toolJudgeOutput(task: string, judgeAgent: Agent): Promise<string> {
  const call = TOOL_CALLS[JUDGED_STEP - 1] as (typeof TOOL_CALLS)[number];
  const payload = buildToolCallPayload({
    task,
    proposal: { namespace: "", execution: "", iteration: 1, step: JUDGED_STEP, toolCallId: "", tool: call.tool, args: call.args },
    availableTools: ["fs.list", "fs.read", "fs.write", "cmd.run"],
    workerMounts: [],
    validator: { type: "semantic", judge_agent: TOOL_JUDGE, min_score: 0.6, min_confidence: 0.5 },
    policyViolations: [],
    judge: judgeAgent,
  });
  const launch = join(REPO_DIR, "dist", "bin", "gavel-launch");
  return runOk(launch, ["node", join(REPO_DIR, "dist", "judges", "rule-judge", "main.js")], {
    env: { ...process.env, GAVEL_INPUT: JSON.stringify(payload) },
  });
}

/** The variant's NATS: operator mode from `gavel nats bootstrap`, and the controller's flags with the credentials Secret "mounted" in `dir`. */
export interface ScaleNats {
  server: NatsServer;
  controllerArgs: string[];
  /** gavel's own credential (the controller's). */
  controllerCreds: Buffer;
  stop(): Promise<void>;
}

/** Bootstraps gavel's NATS keys into `namespace` as the chart's hook does, starts nats-server -js trusting them, and mounts the credentials Secret into `dir`. */
export async function startScaleNats(cp: ControlPlane, namespace: string, dir: string): Promise<ScaleNats> {
  const auth = join(dir, "auth", "auth.conf");
  const boot = await run("node", [
    join(REPO_DIR, "dist", "src", "cli", "main.js"),
    ...["nats", "bootstrap", "--kubeconfig", cp.kubeconfigPath, "-n", namespace],
    ...["--operator-secret", "gavel-nats-operator", "--credentials-secret", "gavel-nats-credentials"],
    ...["--auth-config", auth, "--resolver-dir", join(dir, "jwt")],
  ]);
  if (boot.code !== 0) throw new Error(`gavel nats bootstrap: ${boot.stderr}`);
  const server = await startNats({ extraConfig: await readFile(auth, "utf8") });
  const core = cp.kc.makeApiClient(k8s.CoreV1Api);
  const secret = await core.readNamespacedSecret({ name: "gavel-nats-credentials", namespace });
  const mount = join(dir, "nats-mount");
  await mkdir(mount, { recursive: true });
  for (const [k, v] of Object.entries(secret.data ?? {})) await writeFile(join(mount, k), Buffer.from(v, "base64"));
  return {
    server,
    controllerArgs: ["--nats", server.url, "--nats-creds", join(mount, "nats.creds"), "--nats-keys", mount],
    controllerCreds: await readFile(join(mount, "nats.creds")),
    stop: () => server.stop(),
  };
}

/** One call as the worker saw it. */
export interface CallSeen {
  execution: string;
  step: number;
  expect: (typeof TOOL_CALLS)[number]["expect"];
  /** Milliseconds from propose() to its decision, the worker's own round trip. */
  ms: number;
  decision?: ToolCallDecision;
  error?: string;
}

/** The worker runtime's side of each worker pod: its calls when the pod runs, then its program's end. */
export class WorkerPlayer {
  readonly calls: CallSeen[] = [];
  readonly errors: string[] = [];
  private readonly started = new Set<string>();
  private readonly running: Promise<void>[] = [];
  private readonly hasher = new ToolCodeHasher(builtinToolFiles());
  private pods?: Informer<k8s.V1Pod>;

  constructor(
    private readonly cp: ControlPlane,
    private readonly namespace: string,
    private readonly dir: string,
  ) {}

  /** Watches the namespace's pods; each worker pod seen Running gets its calls once. */
  async start(): Promise<void> {
    await this.hasher.refresh();
    await mkdir(join(this.dir, "worker-creds"), { recursive: true });
    this.pods = new Informer<k8s.V1Pod>({
      kc: this.cp.kc,
      resource: podResource(this.cp.kc, LABELS.managed),
      namespaces: [this.namespace],
    });
    this.pods.on((event, pod) => {
      const name = pod.metadata?.name ?? "";
      if (event === "delete" || !name.endsWith("-i1-ex") || pod.status?.phase !== "Running" || this.started.has(name)) return;
      this.started.add(name);
      this.running.push(this.play(pod).catch((err: unknown) => void this.errors.push(`${name}: ${messageOf(err)}`)));
    });
    await this.pods.start();
  }

  /** Waits for every started worker's calls, then stops watching. */
  async stop(): Promise<void> {
    await Promise.all(this.running);
    await this.pods?.stop();
  }

  /** The worker of `pod`: reads its config from the pod's env and its credential from the mounted Secret, dials the gate, proposes, ends. */
  private async play(pod: k8s.V1Pod): Promise<void> {
    const core = this.cp.kc.makeApiClient(k8s.CoreV1Api);
    const name = pod.metadata?.name ?? "";
    const main = pod.spec?.containers.find((c) => c.name === "main");
    const env: Record<string, string> = {};
    for (const e of main?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    // The Secret the pod mounts, read as the kubelet reads it for the volume.
    const secretName = pod.spec?.volumes?.find((v) => v.secret !== undefined)?.secret?.secretName;
    if (secretName === undefined) throw new Error("the worker pod mounts no credential Secret");
    const secret = await core.readNamespacedSecret({ name: secretName, namespace: this.namespace });
    const credsFile = join(this.dir, "worker-creds", `${name}.creds`);
    await writeFile(credsFile, Buffer.from(secret.data?.["nats.creds"] ?? "", "base64"));
    // The model is what the harness stands in for: its turns are the fixed calls below.
    const config = readAgentConfig({ ...env, GAVEL_NATS_CREDS_FILE: credsFile, GAVEL_MODEL: "scripted", GAVEL_SCRIPT: "[]" });
    // As connectWorker bounds it (src/agent/worker-connections.ts): every wait for the gate ends before the iteration's.
    const deadlineMs = gateBudgetEnd(Date.now(), config.iterationTimeoutMs, config.gate.totalTimeoutMs, config.deadlineMs);
    const bounded = config.iterationTimeoutMs !== undefined || config.deadlineMs !== undefined;
    const nc: NatsConnection = await connectGate(config, deadlineMs, () => undefined);
    try {
      const gate = new ToolCallClient(nc, { ...config.gate, ...(bounded ? { deadlineMs } : {}) });
      const hashes = this.hasher.hashes();
      for (const [i, call] of TOOL_CALLS.entries()) {
        const step = i + 1;
        const toolHash = hashes.get(call.tool);
        const proposal: ToolCallProposal = {
          namespace: config.namespace,
          execution: config.execution,
          iteration: config.iteration,
          step,
          toolCallId: `i${config.iteration}-s${step}-scale`,
          tool: call.tool,
          args: call.args,
          ...(toolHash !== undefined ? { toolHash } : {}),
        };
        const t0 = performance.now();
        const seen: CallSeen = { execution: config.execution, step, expect: call.expect, ms: 0 };
        try {
          seen.decision = await gate.propose(proposal);
        } catch (err) {
          seen.error = messageOf(err);
        }
        seen.ms = performance.now() - t0;
        this.calls.push(seen);
      }
    } finally {
      await nc.close();
    }
    // The program has ended: kwok's Stage ends the pod now, as the kubelet would on the container's exit.
    await core.patchNamespacedPod(
      { name, namespace: this.namespace, body: { metadata: { annotations: { [PROGRAM_ENDED]: "true" } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
  }
}

/** Every record the store took for the namespace's calls, from before the first create. */
export interface DecisionCount {
  watch: RecordWatch;
  nc: NatsConnection;
  /** Decision records per call (`execution/toolCallId`), and calls with a claim but no decision. */
  count(): { decisions: Map<string, number>; claimsOnly: string[] };
  stop(): Promise<void>;
}

/** A consumer on the tool-call store (GAVEL_DECISIONS) for `namespace`'s calls, with gavel's own credential. */
export async function countDecisions(server: NatsServer, creds: Buffer, namespace: string): Promise<DecisionCount> {
  const nc = await connect({ servers: server.url, authenticator: credsAuthenticator(creds) });
  const watch = await watchDecisionRecords(nc, `${DECISION_SUBJECT_PREFIX}.${token(namespace)}.>`);
  return {
    watch,
    nc,
    count() {
      const decisions = new Map<string, number>();
      const claimed = new Set<string>();
      watch.subjects.forEach((subject, i) => {
        // gavel.decisions.<ns>.<execution>.<run uid>.<toolCallId>
        const parts = subject.split(".");
        const key = `${parts[3] ?? ""}/${parts[5] ?? ""}`;
        const r = watch.records[i] as ToolCallRecord;
        if (r.kind === "decision") decisions.set(key, (decisions.get(key) ?? 0) + 1);
        else claimed.add(key);
      });
      return { decisions, claimsOnly: [...claimed].filter((k) => !decisions.has(k)) };
    },
    async stop() {
      await watch.stop();
      await nc.close();
    },
  };
}

/** What the tools variant saw: each call as its worker saw it, the store's decision records per call, and what failed in the harness's own part. */
export interface ToolsOutcome {
  calls: CallSeen[];
  /** Decision records per call (`execution/toolCallId`) in the store. */
  decisions: Map<string, number>;
  /** Calls the store holds a claim of and no decision. */
  claimsOnly: string[];
  errors: string[];
}

/** The tools variant's running part: the store's consumer and the workers' player, started before the first create. */
export async function startToolCalls(cp: ControlPlane, namespace: string, dir: string, nats: ScaleNats) {
  const counter = await countDecisions(nats.server, nats.controllerCreds, namespace);
  const player = new WorkerPlayer(cp, namespace, dir);
  await player.start();
  return {
    /** Once every Execution has ended: waits for the workers' last calls and for the store's records of every call (up to 30 s). */
    async finish(): Promise<ToolsOutcome> {
      await player.stop();
      const want = player.calls.length;
      await eventually(() => (counter.count().decisions.size >= want ? true : undefined), {
        timeoutMs: 30_000,
        what: `a decision record of each of the ${want} calls (${counter.count().decisions.size} so far)`,
      }).catch(() => undefined);
      // A second decision of a call would come right after the first: give it a moment to show.
      await sleep(1000);
      return { calls: player.calls, ...counter.count(), errors: player.errors };
    },
    async stop() {
      await player.stop().catch(() => undefined);
      await counter.stop();
    },
  };
}

// The web view in a real headless Chromium (Debian's package, over the DevTools protocol) on
// the single-node cluster: `gavel ui` following the chart's NATS event stream while the
// chart's controller runs two examples (refine-once: two iterations, a command judge's
// verdict; guarded-tools: guard blocks and judged tool calls). The DOM is read while the runs
// progress; a screenshot of each page is kept under test-artifacts/web-view/. In the shared
// lane: the e2e install serves the web view already (ui.enabled), so nothing here restarts the
// controller; what it reads is this file's namespace only.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Chromium, type Page } from "../harness/chromium.js";
import { type Cluster } from "../harness/cluster.js";
import { chartRuns } from "../harness/chart-runs.js";
import { eventually, sleep } from "../harness/eventually.js";
import { type Executions } from "../harness/executions.js";
import { CONTROLLER_DEPLOYMENT, RELEASE_NAMESPACE } from "../harness/gavel-chart.js";
import { KUBECTL, REPO_DIR } from "../harness/paths.js";

const GAVEL = join(REPO_DIR, "bin", "gavel");
const ARTIFACTS = join(REPO_DIR, "test-artifacts", "web-view");
const SECRET = "sk-web-view-never-shown-77";

/** What the page shows of a tree at one moment, read from its DOM. */
interface Seen {
  phase: string;
  updates: number;
  iterations: { n: number; validators: { state: string; score: string | null; min: string | null }[] }[];
  judges: { child: string; score: string | null; reasoning: string }[];
  toolCalls: { tool: string; outcome: string; decidedBy: string }[];
}

const READ_TREE = `(() => {
  const section = document.querySelector("section.execution");
  return section === null ? null : {
    phase: section.dataset.phase,
    updates: Number(document.body.dataset.updates ?? 0),
    iterations: [...section.querySelectorAll("li.iteration")].map((it) => ({
      n: Number(it.dataset.iteration),
      validators: [...it.querySelectorAll("li.validator")].map((v) => {
        const bar = v.querySelector(":scope > .row .score");
        return { state: v.dataset.state, score: bar?.dataset.score || null, min: bar?.dataset.min || null };
      }),
    })),
    judges: [...section.querySelectorAll("li.judge")].map((j) => ({ child: j.dataset.child, score: j.querySelector(".score")?.dataset.score || null, reasoning: j.querySelector(".reasoning")?.textContent ?? "" })),
    toolCalls: [...section.querySelectorAll("tr.toolcall")].map((r) => ({ tool: r.querySelector(".tool").textContent, outcome: r.querySelector(".outcome").textContent, decidedBy: r.querySelector(".decided-by").textContent })),
  };
})()`;

describe("the web view in headless Chromium, on the single-node cluster", () => {
  let cluster: Cluster;
  let runs: Executions;
  let ui: ChildProcess;
  let url: string;
  let browser: Chromium;
  let dir: string;
  let uiOut = "";

  beforeAll(async () => {
    ({ cluster, runs } = await chartRuns("e2e-web-view", { logTail: 4000, diagnostics: () => `gavel ui:\n${uiOut}` }));
    const ns = runs.namespace;
    const applied = await cluster.kubectl([
      "apply",
      "-n",
      ns,
      ...[
        "judges/command-judge/agent.yaml",
        "judges/rule-judge/agent.yaml",
        "examples/kubernetes/agent.yaml",
        "examples/guarded-tools/agent.yaml",
        "examples/guarded-tools/policy.yaml",
      ].flatMap((f) => ["-f", join(REPO_DIR, f)]),
    ]);
    if (applied.code !== 0) throw new Error(`kubectl apply: ${applied.stderr}`);

    // gavel ui as a user runs it: their kubeconfig, the chart's NATS with its credentials.
    const core = cluster.kc.makeApiClient(k8s.CoreV1Api);
    dir = await mkdtemp(join(tmpdir(), "gavel-e2e-web-view-"));
    const secret = await core.readNamespacedSecret({ name: "gavel-nats-credentials", namespace: RELEASE_NAMESPACE });
    const creds = join(dir, "gavel.creds");
    await writeFile(creds, Buffer.from(secret.data?.["nats.creds"] ?? "", "base64"), { mode: 0o600 });
    const nats = await core.readNamespacedPod({ name: "gavel-nats-0", namespace: RELEASE_NAMESPACE });
    ui = spawn(
      GAVEL,
      ["ui", "--addr", "127.0.0.1:0", "-n", ns, "--nats", `nats://${nats.status?.podIP ?? ""}:4222`, "--nats-creds", creds],
      { env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath } },
    );
    ui.stdout?.on("data", (d: Buffer) => (uiOut += d.toString()));
    ui.stderr?.on("data", (d: Buffer) => (uiOut += d.toString()));
    url = await eventually(
      () => /at (http:\/\/\S+)/.exec(uiOut)?.[1] ?? (ui.exitCode !== null ? Promise.reject(new Error(uiOut)) : undefined),
      30_000,
      "gavel ui's address",
    );
    expect(uiOut).toContain("live from the event stream");
    browser = await Chromium.launch();
    await mkdir(ARTIFACTS, { recursive: true });
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    ui?.kill("SIGTERM");
    if (runs !== undefined) await cluster.deleteNamespace(runs.namespace);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** Opens a page and marks its window, so a later check can tell the page was never reloaded. */
  async function open(path: string): Promise<Page> {
    const page = await browser.newPage(1100, 900);
    await page.goto(`${url}${path}`);
    await eventually(
      () => page.evaluate<boolean>(`document.getElementById("live")?.dataset.state === "live" || undefined`),
      20_000,
      `${path} to go live`,
    );
    await page.evaluate("window.__sameDocument = true");
    return page;
  }

  /** Reads the tree every 250 ms until its phase is final; returns every distinct reading. */
  async function watchUntilFinal(page: Page, timeoutMs: number): Promise<Seen[]> {
    const seen: Seen[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const now = await page.evaluate<Seen | null>(READ_TREE);
      if (now !== null && JSON.stringify(now) !== JSON.stringify(seen.at(-1))) seen.push(now);
      if (now !== null && ["Succeeded", "Failed", "Cancelled", "TimedOut"].includes(now.phase)) return seen;
      if (Date.now() > deadline)
        throw new Error(`the page did not show a final phase in ${timeoutMs} ms; last: ${JSON.stringify(now)}\n${uiOut.slice(-2000)}`);
      await sleep(250);
    }
  }

  it("Given two runs started while their pages are open, the pages show their trees growing: score bars against thresholds, the judge's verdict and reasoning, the tool calls and who decided them", async () => {
    const t0 = Date.now();
    const list = await open(`namespaces/${runs.namespace}/executions`);
    expect(await list.evaluate<string>(`document.querySelector("p.empty")?.textContent ?? ""`)).toContain("No Executions");

    // When both runs are created, the namespace page lists them without a reload
    await runs.apply(`apiVersion: 100monkeys.ai/v1
kind: Execution
metadata: {name: refine}
spec:
  agentRef: {name: sum-writer}
  input: {note: ${SECRET}}
`);
    await runs.apply(`apiVersion: 100monkeys.ai/v1
kind: Execution
metadata: {name: guarded-tools}
spec:
  agentRef: {name: guarded-tools}
`);
    await eventually(
      () =>
        list.evaluate<boolean>(`document.querySelectorAll("tr[data-name=refine], tr[data-name=guarded-tools]").length === 2 || undefined`),
      20_000,
      "both runs listed",
    );
    expect(await list.evaluate<boolean>("window.__sameDocument === true")).toBe(true);

    // Then each run's page, opened while it runs, grows as it progresses
    const refinePage = await open(`namespaces/${runs.namespace}/executions/refine`);
    const guardedPage = await open(`namespaces/${runs.namespace}/executions/guarded-tools`);
    const [refine, guarded] = await Promise.all([watchUntilFinal(refinePage, 240_000), watchUntilFinal(guardedPage, 240_000)]);
    const took = (Date.now() - t0) / 1000;

    const last = refine.at(-1) as Seen;
    expect(last.phase).toBe("Succeeded");
    // Score bars appeared while the run was still going: some reading before the last had a scored validator.
    const scoredWhileRunning = refine.filter(
      (s) => s.phase !== "Succeeded" && s.iterations.some((it) => it.validators.some((v) => v.score !== null)),
    );
    expect(scoredWhileRunning.length, JSON.stringify(refine.map((s) => [s.phase, s.iterations.length]))).toBeGreaterThan(0);
    // Iteration 1 (shown last) stopped at the command judge's validator (score < 1.0), iteration 2 passed all five.
    const [second, first] = last.iterations;
    expect([second?.n, first?.n]).toEqual([2, 1]);
    expect(first?.validators.map((v) => v.state)).toEqual(["passed", "passed", "passed", "failed"]);
    expect(first?.validators[3]).toMatchObject({ min: "1" });
    expect(Number(first?.validators[3]?.score)).toBeLessThan(1);
    expect(second?.validators.map((v) => [v.state, v.score !== null])).toEqual(Array(5).fill(["passed", true]));
    const judge = last.judges.find((j) => j.child === "refine-i1-v3-command-judge");
    expect(Number(judge?.score)).toBeLessThan(1);
    expect(judge?.reasoning.length).toBeGreaterThan(0);
    expect(last.updates).toBeGreaterThan(2);
    expect(await refinePage.evaluate<boolean>("window.__sameDocument === true")).toBe(true);

    const calls = (guarded.at(-1) as Seen).toolCalls;
    expect((guarded.at(-1) as Seen).phase).toBe("Succeeded");
    expect(calls.map((c) => [c.tool, c.outcome, c.decidedBy])).toEqual([
      ["cmd.run", "blocked by guard", "guard: destructive_pattern"],
      ["cmd.run", "blocked by guard", "guard: destructive_pattern"],
      ["http.post", "blocked by guard", "guard: capability"],
      ["fs.write", "blocked by guard", "guard: sequence_contract"],
      ["cmd.run", "allowed", "judges"],
      ["fs.read", "allowed", "guard"],
      ["fs.write", "allowed", "judges"],
    ]);
    // The event stream moved the page: its events are listed (types only).
    expect(await guardedPage.evaluate<number>(`document.querySelectorAll("#activity li").length`)).toBeGreaterThan(0);

    // Nothing of the input or of the calls' arguments reaches a page.
    for (const page of [list, refinePage, guardedPage]) {
      const text = await page.evaluate<string>("document.documentElement.outerHTML");
      expect(text).not.toContain(SECRET);
      expect(text).not.toMatch(/id_rsa|example\.com/);
    }

    const shots = [];
    for (const [name, page] of [
      ["refine", refinePage],
      ["guarded-tools", guardedPage],
    ] as const) {
      const file = join(ARTIFACTS, `${name}.png`);
      shots.push(`${file} (${await page.screenshot(file)} bytes)`);
    }
    const pageBytes = await refinePage.evaluate<number>(`document.documentElement.outerHTML.length`);
    console.log(
      `web view e2e: both runs final ${took.toFixed(1)} s after they were applied; ${refine.length} distinct readings of refine's page, ${guarded.length} of guarded-tools'; refine's page ${pageBytes} characters\nscreenshots: ${shots.join(", ")}`,
    );
  }, 300_000);

  it("Given the chart's ui.enabled, the controller serves the same pages under /ui/, reached by kubectl port-forward", async () => {
    // The e2e install sets ui.enabled (test/harness/gavel-chart.ts), so no rollout of its own.
    const forward = spawn(KUBECTL, [
      "--kubeconfig",
      cluster.kubeconfigPath,
      "port-forward",
      "-n",
      RELEASE_NAMESPACE,
      `deploy/${CONTROLLER_DEPLOYMENT}`,
      ":8081",
    ]);
    let said = "";
    forward.stdout.on("data", (d: Buffer) => (said += d.toString()));
    forward.stderr.on("data", (d: Buffer) => (said += d.toString()));
    try {
      const port = await eventually(() => /Forwarding from 127\.0\.0\.1:(\d+)/.exec(said)?.[1], 30_000, "kubectl port-forward");
      const page = await browser.newPage(1100, 900);
      // goto returns once the page has loaded: read before, a body arriving in parts through the
      // port-forward showed refine's header (Succeeded) and iteration 2 only (a flaky failure;
      // test/integration/chromium-page.test.ts). Loaded, the page shows the whole finished tree at once.
      await page.goto(`http://localhost:${port}/ui/namespaces/${runs.namespace}/executions/refine`);
      const tree = await page.evaluate<Seen | null>(READ_TREE);
      const status = (await runs.get("refine"))?.status;
      const shown = `the page showed ${tree !== null ? JSON.stringify(tree) : JSON.stringify(await page.evaluate<string>(`document.body?.innerText ?? ""`))}; the API's status: phase ${status?.phase ?? "?"}, iterations ${JSON.stringify(status?.iterations?.map((it) => it.number))}`;
      expect({ phase: tree?.phase, iterations: tree?.iterations.map((it) => it.n) }, shown).toEqual({
        phase: "Succeeded",
        iterations: [2, 1],
      });
      expect(tree?.iterations[0]?.validators.every((v) => v.state === "passed" && v.score !== null)).toBe(true);
      await eventually(
        () => page.evaluate<boolean>(`document.getElementById("live")?.dataset.state === "live" || undefined`),
        10_000,
        "the controller-served page to go live",
      );
    } finally {
      forward.kill("SIGTERM");
    }
  }, 300_000);

  it("Given an Execution that does not exist, the browser gets a 404 page", async () => {
    const page = await open(`namespaces/${runs.namespace}/executions`);
    const fromOrigin = await page.evaluate<number>(`fetch("namespaces/${runs.namespace}/executions/no-such-run").then((r) => r.status)`);
    expect(fromOrigin).toBe(404);
    await page.goto(`${url}namespaces/${runs.namespace}/executions/no-such-run`);
    await eventually(
      () => page.evaluate<string>(`document.querySelector("section.not-found")?.textContent || undefined`),
      10_000,
      "the 404 page",
    );
  });
});

// The web view (`gavel ui`'s handler) against the real kube-apiserver with a viewer's
// credentials, and the real nats-server's event stream: pages of the namespace and of one
// Execution's tree, 404 for one that does not exist, nothing but GET/HEAD, and the page's
// server-sent events following the status (API watch) or the event stream (NATS).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Execution, ExecutionStatus } from "../../src/api/types.js";
import { GROUP, VERSION } from "../../src/api/types.js";
import { connectKube } from "../../src/views/kube.js";
import { EventStream } from "../../src/transport/event-stream.js";
import { apiWatchFeed, eventStreamFeed } from "../../src/webui/changes.js";
import { LOOPBACK_HOSTS, UiServer } from "../../src/webui/server.js";
import { eventually } from "../harness/eventually.js";
import { startControlPlane, type ControlPlane } from "../harness/control-plane.js";
import { runWriter, type RunWriter } from "../harness/judged-run.js";
import { startNats, type NatsServer } from "../harness/nats.js";
import { viewerKubeconfig } from "../harness/viewer.js";
import { agent, SECRET } from "../fixtures/execution-tree.js";

// The unit tests' Agent (validators exit_code, semantic by checker at 0.8, regex) and its judge.
const AGENTS = JSON.stringify({
  apiVersion: "v1",
  kind: "List",
  items: [
    { ...agent, metadata: { name: "writer" }, spec: { ...agent.spec, runtime: { image: "example/writer:1" } } },
    {
      apiVersion: "100monkeys.ai/v1",
      kind: "Agent",
      metadata: { name: "checker", labels: { role: "judge" } },
      spec: { runtime: { image: "example/checker:1" }, execution: { mode: "one-shot" } },
    },
  ],
});

/** The server-sent events of one stream, read as they come. */
class EventReader {
  readonly events: { event: string; data: string }[] = [];
  private readonly abort = new AbortController();
  status = 0;

  async open(url: string): Promise<void> {
    const res = await fetch(url, { signal: this.abort.signal, headers: { accept: "text/event-stream" } });
    this.status = res.status;
    if (res.body === null || res.status !== 200) return;
    const body = res.body as unknown as AsyncIterable<Uint8Array>;
    const decoder = new TextDecoder();
    void (async () => {
      let buffer = "";
      try {
        for await (const chunk of body) {
          buffer += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const lines = block.split("\n");
            const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
            if (event !== undefined)
              this.events.push({
                event,
                data: lines
                  .filter((l) => l.startsWith("data: "))
                  .map((l) => l.slice(6))
                  .join("\n"),
              });
          }
        }
      } catch {
        /* closed by the test */
      }
    })();
  }

  /** The first event (after the first `after`) of that type whose data passes `test`. */
  next(event: string, test: (data: string) => boolean, after = 0, ms = 20_000): Promise<string> {
    return eventually(
      () => Promise.resolve(this.events.slice(after).find((e) => e.event === event && test(e.data))?.data),
      ms,
      `a "${event}" event`,
    );
  }

  close(): void {
    this.abort.abort();
  }
}

describe("web view (real kube-apiserver, viewer credentials; real NATS event stream)", () => {
  let cp: ControlPlane;
  let ns: string;
  let api: k8s.CustomObjectsApi;
  let runs: RunWriter;
  let dir: string;
  let viewerConfig: string;
  let watchUi: UiServer;
  let base: string;

  const validating = (score: number): ExecutionStatus => ({
    phase: "Running",
    iteration: 1,
    iterations: [
      {
        number: 1,
        phase: "Validating",
        exitCode: 0,
        validators: [{ index: 0, type: "exit_code", passed: true, score, confidence: 1, reasoning: "exit code 0 <as expected>" }],
      },
    ],
  });

  beforeAll(async () => {
    cp = await startControlPlane();
    ns = await cp.createNamespace("web-view");
    const applied = await cp.kubectl(["apply", "-n", ns, "-f", "-"], { stdin: AGENTS });
    expect(applied.code, applied.stderr).toBe(0);
    api = cp.kc.makeApiClient(k8s.CustomObjectsApi);
    runs = runWriter(cp.kc, ns);
    const run = await runs.createRun("run", "writer", { token: SECRET });
    await runs.putStatus("run", {
      ...validating(1),
      iterations: [
        {
          ...(validating(1).iterations?.[0] as NonNullable<ExecutionStatus["iterations"]>[number]),
          validators: [
            { index: 0, type: "exit_code", passed: true, score: 1, confidence: 1, reasoning: "exit 0" },
            {
              index: 1,
              type: "semantic",
              passed: false,
              score: 0.5,
              confidence: 0.9,
              reasoning: "judge checker: <b>sum</b> subtracts",
              children: ["run-i1-v1-checker"],
            },
          ],
        },
      ],
      children: [
        { name: "run-i1-v1-checker", purpose: "validation", iteration: 1, validatorIndex: 1, judge: "checker", phase: "Succeeded" },
      ],
    });
    await runs.createJudgeChild(run, { judge: "checker", iteration: 1, validatorIndex: 1, input: { proposed: SECRET } });
    await runs.putStatus("run-i1-v1-checker", {
      phase: "Succeeded",
      verdict: { score: 0.5, confidence: 0.9, reasoning: "sum <script>subtracts</script>" },
    });

    dir = await mkdtemp(join(tmpdir(), "gavel-web-view-"));
    viewerConfig = await viewerKubeconfig(cp, ns, dir);
    const kube = connectKube({ kubeconfig: viewerConfig }, { env: {} });
    watchUi = await UiServer.listen("127.0.0.1", 0, {
      kube,
      namespace: ns,
      changes: apiWatchFeed(kube),
      base: "/ui/",
      hosts: LOOPBACK_HOSTS,
    });
    base = watchUi.url;
  }, 180_000);

  afterAll(async () => {
    await watchUi?.close();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("Given a judged run, the namespace page lists it with its judge child, and its page shows the tree: score bars against thresholds, the judge's verdict, text escaped, no input", async () => {
    const root = await fetch(base, { redirect: "manual" });
    expect([root.status, root.headers.get("location")]).toEqual([302, `/ui/namespaces/${ns}/executions`]);
    const list = await fetch(`${base}namespaces/${ns}/executions`);
    expect(list.status).toBe(200);
    expect(list.headers.get("content-security-policy")).toContain("script-src 'self'");
    const listHtml = await list.text();
    expect(listHtml).toContain(`<a href="/ui/namespaces/${ns}/executions/run">run</a>`);
    expect(listHtml).toMatch(/class="depth-1" data-name="run-i1-v1-checker"/);

    const page = await (await fetch(`${base}namespaces/${ns}/executions/run`)).text();
    expect(page).toContain('data-score="0.5" data-min="0.8"');
    expect(page).toContain('data-child="run-i1-v1-checker"');
    expect(page).toContain("sum &lt;script&gt;subtracts&lt;/script&gt;");
    expect(page).toContain("judge checker: &lt;b&gt;sum&lt;/b&gt; subtracts");
    expect(page).not.toContain(SECRET);
    const json = (await (await fetch(`${base}api/namespaces/${ns}/executions/run`)).json()) as {
      iterations: { validators: { minScore?: number }[] }[];
    };
    // The regex validator is still to come: pending, with its threshold.
    expect(json.iterations[0]?.validators.map((v) => v.minScore)).toEqual([1, 0.8, 1]);
    const child = await (await fetch(`${base}namespaces/${ns}/executions/run-i1-v1-checker`)).text();
    expect(child).toContain(`<a href="/ui/namespaces/${ns}/executions/run">run</a>`);
    expect(child).not.toContain(SECRET);
    const js = await fetch(`${base}assets/ui.js`);
    expect([js.status, js.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
  });

  it("Given an Execution that does not exist, its page, stream and JSON answer 404; anything but GET is 405 and changes nothing; a foreign Host is refused", async () => {
    for (const path of [
      `namespaces/${ns}/executions/nope`,
      `stream/namespaces/${ns}/executions/nope`,
      `api/namespaces/${ns}/executions/nope`,
      "namespaces/NOT_A_NAME/executions",
      "nothing/here",
    ]) {
      const r = await fetch(`${base}${path}`);
      expect(r.status, path).toBe(404);
    }
    expect(await (await fetch(`${base}namespaces/${ns}/executions/nope`)).text()).toContain(`No Execution nope in namespace ${ns}.`);
    const before = (await api.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: "executions",
      name: "run",
    })) as Execution;
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      const r = await fetch(`${base}namespaces/${ns}/executions/run`, { method, body: method === "DELETE" ? null : "{}" });
      expect([r.status, r.headers.get("allow")], method).toEqual([405, "GET, HEAD"]);
    }
    const after = (await api.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: "executions",
      name: "run",
    })) as Execution;
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    const url = new URL(base);
    const foreign = await new Promise<number>((resolve, reject) => {
      // fetch sets Host itself; a raw request names another (a DNS-rebinding page's).
      void import("node:http").then(({ request }) =>
        request({ host: url.hostname, port: url.port, path: "/ui/", headers: { host: "evil.example" } }, (res) =>
          resolve(res.statusCode ?? 0),
        )
          .on("error", reject)
          .end(),
      );
    });
    expect(foreign).toBe(403);
  });

  it("Given a page's stream (API-server watch), each status change sends the new tree, and deleting the Execution ends it", async () => {
    await runs.createRun("live", "writer", { token: SECRET });
    await runs.putStatus("live", validating(0.25));
    const sse = new EventReader();
    await sse.open(`${base}stream/namespaces/${ns}/executions/live`);
    try {
      expect(sse.status).toBe(200);
      await sse.next("view", (d) => d.includes('data-score="0.25"'));
      const seen = sse.events.length;
      await runs.putStatus("live", validating(0.75));
      const next = await sse.next("view", (d) => d.includes('data-score="0.75"'), seen);
      expect(next).toContain("exit code 0 &lt;as expected&gt;");
      expect(next).not.toContain(SECRET);
      await api.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: "executions", name: "live" });
      expect(await sse.next("gone", () => true)).toContain("was deleted");
    } finally {
      sse.close();
    }
  });

  describe("with NATS", () => {
    let nats: NatsServer;
    let nc: NatsConnection;
    let stream: EventStream;
    let natsUi: UiServer;

    beforeAll(async () => {
      nats = await startNats();
      nc = await connect({ servers: nats.url });
      stream = await EventStream.open(nc);
      const kube = connectKube({ kubeconfig: viewerConfig }, { env: {} });
      // No periodic re-read within the test: only events move the page.
      natsUi = await UiServer.listen("127.0.0.1", 0, {
        kube,
        namespace: ns,
        changes: eventStreamFeed(await EventStream.existing(nc), undefined, 3_600_000),
      });
    }, 60_000);

    afterAll(async () => {
      await natsUi?.close();
      await nc?.drain();
      await nats?.stop();
    });

    it("Given a page's stream on the event stream, an event of the tree sends its name to the page and the tree read after it", async () => {
      await runs.createRun("evented", "writer", { token: SECRET });
      await runs.putStatus("evented", validating(0.25));
      const sse = new EventReader();
      await sse.open(`${natsUi.url}stream/namespaces/${ns}/executions/evented`);
      try {
        await sse.next("view", (d) => d.includes('data-score="0.25"'));
        await runs.putStatus("evented", validating(0.6));
        // Another tree's event moves nothing on this page.
        await stream.publish(EventStream.event({ namespace: ns, root: "other", execution: "other", type: "validator.result", data: {} }));
        await stream.publish(
          EventStream.event({
            namespace: ns,
            root: "evented",
            execution: "evented",
            type: "validator.result",
            data: { iteration: 1, index: 0, score: 0.6, args: SECRET },
          }),
        );
        const activity = JSON.parse(await sse.next("activity", () => true)) as Record<string, unknown>;
        expect([Object.keys(activity).sort(), activity.execution, activity.type]).toEqual([
          ["execution", "time", "type"],
          "evented",
          "validator.result",
        ]);
        await sse.next("view", (d) => d.includes('data-score="0.6"'));
        expect(sse.events.filter((e) => e.event === "activity")).toHaveLength(1);
        expect(sse.events.map((e) => e.data).join("\n")).not.toContain(SECRET);
      } finally {
        sse.close();
      }
    });
  });
});

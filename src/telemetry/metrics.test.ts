import { describe, expect, it } from "vitest";
import { reconcileMetrics, Registry, workQueueMetrics } from "./metrics.js";
import { WorkQueue } from "../controller/runtime/work-queue.js";

describe("Registry: Prometheus text exposition", () => {
  it("renders counters, gauges and histograms with HELP, TYPE, escaped labels and cumulative buckets", () => {
    const r = new Registry();
    const c = r.counter("x_total", "Things\nwith a \\ newline", ["kind"]);
    c.inc({ kind: 'a"b' });
    c.inc({ kind: 'a"b' }, 2);
    r.gauge("depth", "Depth").set({}, 4);
    const h = r.histogram("t_seconds", "Time", ["op"], [0.1, 1]);
    for (const v of [0.05, 0.5, 3]) h.observe({ op: "get" }, v);
    expect(r.render()).toBe(
      [
        "# HELP depth Depth",
        "# TYPE depth gauge",
        "depth 4",
        "# HELP t_seconds Time",
        "# TYPE t_seconds histogram",
        't_seconds_bucket{op="get",le="0.1"} 1',
        't_seconds_bucket{op="get",le="1"} 2',
        't_seconds_bucket{op="get",le="+Inf"} 3',
        't_seconds_sum{op="get"} 3.55',
        't_seconds_count{op="get"} 3',
        "# HELP x_total Things\\nwith a \\\\ newline",
        "# TYPE x_total counter",
        'x_total{kind="a\\"b"} 3',
        "",
      ].join("\n"),
    );
    expect(c.get({ kind: 'a"b' })).toBe(3);
    expect(h.count({ op: "get" })).toBe(3);
  });

  it("defining a metric again returns the same one; another type or other labels is refused by name", () => {
    const r = new Registry();
    const a = r.counter("a_total", "A", ["x"]);
    expect(r.counter("a_total", "A", ["x"])).toBe(a);
    expect(() => r.gauge("a_total", "A", ["x"])).toThrow("metric a_total is already defined as a counter with labels {x}");
    expect(() => r.counter("a_total", "A", ["y"])).toThrow("already defined");
    expect(() => a.inc({ y: "1" })).toThrow("metric a_total: labels {y} are not {x}");
    expect(() => a.inc({ x: "1" }, -1)).toThrow("cannot add -1");
    expect(() => r.counter("bad-name", "B")).toThrow("metric name bad-name is not valid");
  });

  it("collected series are read when rendered and by get()", () => {
    const r = new Registry();
    let n = 1;
    const c = r.counter("seen_total", "Seen", [], () => [[{}, n]]);
    n = 5;
    expect(c.get()).toBe(5);
    expect(r.render()).toContain("seen_total 5\n");
  });
});

describe("the work queue counts under client-go's names", () => {
  it("adds, depth, time queued and processing, retries", async () => {
    const r = new Registry();
    const labels = { controller: "agent", name: "agent" };
    const q = new WorkQueue({ metrics: { family: workQueueMetrics(r), labels } });
    const m = workQueueMetrics(r);
    q.add("a");
    q.add("a"); // de-duplicated: not an add
    q.add("b");
    expect(m.adds.get(labels)).toBe(2);
    expect(m.depth.get(labels)).toBe(2);
    expect(m.unfinishedWork.get(labels)).toBe(0);
    const key = await q.get();
    expect(m.depth.get(labels)).toBe(1);
    expect(m.queueDuration.count(labels)).toBe(1);
    // While a key is processed its time so far is unfinished work (client-go's stuck-worker signal).
    await new Promise((r) => setTimeout(r, 20));
    expect(m.unfinishedWork.get(labels)).toBeGreaterThanOrEqual(0.015);
    expect(m.longestRunning.get(labels)).toBeGreaterThanOrEqual(0.015);
    expect(r.render()).toMatch(/^workqueue_unfinished_work_seconds\{controller="agent",name="agent"\} 0\.0\d+$/m);
    q.addRateLimited(key ?? "");
    q.done(key ?? "");
    expect(m.workDuration.count(labels)).toBe(1);
    expect(m.unfinishedWork.get(labels)).toBe(0);
    expect(m.longestRunning.get(labels)).toBe(0);
    expect(m.retries.get(labels)).toBe(1);
    q.shutDown();
    // The reconcile families come from the same registry.
    expect(reconcileMetrics(r).total.get({ controller: "agent", result: "success" })).toBe(0);
  });
});

// gavel's metrics, in the Prometheus text exposition format (version 0.0.4): counters,
// gauges and histograms with labels, kept in a Registry that the composition root creates
// and passes down (no module-level singleton), and every metric gavel exports defined once,
// below. Components read their own counters back synchronously (tests, logs): one counter
// set, whether it is scraped or not.

/** Label values by label name. */
export type Labels = Readonly<Record<string, string>>;

type Kind = "counter" | "gauge" | "histogram";

/** One metric family: its name, help, type, label names and its series. */
abstract class Family {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly kind: Kind,
    readonly labelNames: readonly string[],
  ) {}

  /** The series key of `labels` (every label name, in order); throws on a missing or unknown label. */
  protected key(labels: Labels): string {
    const names = Object.keys(labels);
    if (names.length !== this.labelNames.length || names.some((n) => !this.labelNames.includes(n))) {
      throw new Error(`metric ${this.name}: labels {${names.join(",")}} are not {${this.labelNames.join(",")}}`);
    }
    return JSON.stringify(this.labelNames.map((n) => labels[n]));
  }

  protected labelsOf(key: string): Labels {
    const values = JSON.parse(key) as string[];
    return Object.fromEntries(this.labelNames.map((n, i) => [n, values[i] ?? ""]));
  }

  /** The sample lines of this family. */
  abstract samples(): string[];
}

/** A value per label set: counters and gauges. */
class Scalar extends Family {
  private readonly values = new Map<string, number>();

  constructor(
    name: string,
    help: string,
    kind: "counter" | "gauge",
    labelNames: readonly string[],
    private readonly collect?: () => Iterable<[Labels, number]>,
  ) {
    super(name, help, kind, labelNames);
  }

  protected add(labels: Labels, n: number): void {
    const k = this.key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + n);
  }

  protected put(labels: Labels, v: number): void {
    this.values.set(this.key(labels), v);
  }

  /** The current value of one series (0 when never touched). */
  get(labels: Labels = {}): number {
    if (this.collect !== undefined) {
      const want = this.key(labels);
      for (const [l, v] of this.collect()) if (this.key(l) === want) return v;
      return 0;
    }
    return this.values.get(this.key(labels)) ?? 0;
  }

  samples(): string[] {
    const series: [Labels, number][] =
      this.collect !== undefined ? [...this.collect()] : [...this.values].map(([k, v]) => [this.labelsOf(k), v]);
    return series.map(([l, v]) => `${this.name}${labelText(l)} ${numberText(v)}`);
  }
}

/** Only goes up (by a non-negative amount). Names end in _total. */
export class Counter extends Scalar {
  inc(labels: Labels = {}, n = 1): void {
    if (!(n >= 0)) throw new Error(`counter ${this.name}: cannot add ${n}`);
    this.add(labels, n);
  }
}

/** Goes up and down. */
export class Gauge extends Scalar {
  private readonly readers = new Map<string, () => number>();

  set(labels: Labels, v: number): void {
    this.put(labels, v);
  }

  /** The series of `labels` is read from `read` whenever it is read or scraped (e.g. seconds of work in progress). */
  readWith(labels: Labels, read: () => number): void {
    this.readers.set(this.key(labels), read);
  }

  override get(labels: Labels = {}): number {
    return this.readers.get(this.key(labels))?.() ?? super.get(labels);
  }

  override samples(): string[] {
    return [
      ...super.samples(),
      ...[...this.readers].map(([k, read]) => `${this.name}${labelText(this.labelsOf(k))} ${numberText(read())}`),
    ];
  }

  inc(labels: Labels = {}, n = 1): void {
    this.add(labels, n);
  }

  dec(labels: Labels = {}, n = 1): void {
    this.add(labels, -n);
  }
}

/** Observations counted into cumulative buckets (upper bounds), with their sum and count. */
export class Histogram extends Family {
  private readonly series = new Map<string, { counts: number[]; sum: number; count: number }>();

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, "histogram", labelNames);
    if (buckets.length === 0 || buckets.some((b, i) => i > 0 && b <= (buckets[i - 1] ?? 0)))
      throw new Error(`histogram ${name}: buckets must increase`);
  }

  observe(labels: Labels, value: number): void {
    const k = this.key(labels);
    let s = this.series.get(k);
    if (s === undefined) {
      s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    const i = this.buckets.findIndex((b) => value <= b);
    if (i >= 0) s.counts[i] = (s.counts[i] ?? 0) + 1;
    s.sum += value;
    s.count++;
  }

  /** Observations of one series so far. */
  count(labels: Labels = {}): number {
    return this.series.get(this.key(labels))?.count ?? 0;
  }

  /** Their sum. */
  sum(labels: Labels = {}): number {
    return this.series.get(this.key(labels))?.sum ?? 0;
  }

  samples(): string[] {
    const out: string[] = [];
    for (const [k, s] of this.series) {
      const l = this.labelsOf(k);
      let cumulative = 0;
      this.buckets.forEach((b, i) => {
        cumulative += s.counts[i] ?? 0;
        out.push(`${this.name}_bucket${labelText({ ...l, le: numberText(b) })} ${cumulative}`);
      });
      out.push(`${this.name}_bucket${labelText({ ...l, le: "+Inf" })} ${s.count}`);
      out.push(`${this.name}_sum${labelText(l)} ${numberText(s.sum)}`);
      out.push(`${this.name}_count${labelText(l)} ${s.count}`);
    }
    return out;
  }
}

/** The metric families of one process (or of one component, when none is passed to it). */
export class Registry {
  private readonly families = new Map<string, Family>();

  /** The counter `name`; defining it again with the same type and labels returns the same one. */
  counter(name: string, help: string, labelNames: readonly string[] = [], collect?: () => Iterable<[Labels, number]>): Counter {
    return this.define(name, "counter", labelNames, () => new Counter(name, help, "counter", labelNames, collect));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = [], collect?: () => Iterable<[Labels, number]>): Gauge {
    return this.define(name, "gauge", labelNames, () => new Gauge(name, help, "gauge", labelNames, collect));
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    return this.define(name, "histogram", labelNames, () => new Histogram(name, help, labelNames, buckets));
  }

  /** Every family in the text exposition format, sorted by name. */
  render(): string {
    const out: string[] = [];
    for (const f of [...this.families.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      const samples = f.samples();
      if (samples.length === 0) continue;
      out.push(`# HELP ${f.name} ${f.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`, `# TYPE ${f.name} ${f.kind}`, ...samples);
    }
    return out.length === 0 ? "" : `${out.join("\n")}\n`;
  }

  private define<F extends Family>(name: string, kind: Kind, labelNames: readonly string[], make: () => F): F {
    if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(name)) throw new Error(`metric name ${name} is not valid`);
    const existing = this.families.get(name);
    if (existing !== undefined) {
      if (existing.kind !== kind || existing.labelNames.join() !== labelNames.join())
        throw new Error(`metric ${name} is already defined as a ${existing.kind} with labels {${existing.labelNames.join(",")}}`);
      return existing as F;
    }
    const f = make();
    this.families.set(name, f);
    return f;
  }
}

/** Content type of render()'s text. */
export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')}"`);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

function numberText(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** client-go's workqueue duration buckets: 10 ns to 1000 s, by tens. */
const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)));
/** controller-runtime's reconcile time buckets, in seconds. */
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5,
  5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
/** The guard decides in microseconds to milliseconds. */
const GUARD_BUCKETS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1];
/** Judges and event publishing: milliseconds to minutes. */
const SLOW_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** A work queue's metrics, under client-go's names (label `name`, and controller-runtime's `controller`, both the controller's name). */
export function workQueueMetrics(r: Registry) {
  const l = ["controller", "name"];
  return {
    depth: r.gauge("workqueue_depth", "Current depth of workqueue", l),
    adds: r.counter("workqueue_adds_total", "Total number of adds handled by workqueue", l),
    queueDuration: r.histogram(
      "workqueue_queue_duration_seconds",
      "How long in seconds an item stays in workqueue before being requested",
      l,
      QUEUE_BUCKETS,
    ),
    workDuration: r.histogram(
      "workqueue_work_duration_seconds",
      "How long in seconds processing an item from workqueue takes",
      l,
      QUEUE_BUCKETS,
    ),
    retries: r.counter("workqueue_retries_total", "Total number of retries handled by workqueue", l),
    unfinishedWork: r.gauge(
      "workqueue_unfinished_work_seconds",
      "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      l,
    ),
    longestRunning: r.gauge(
      "workqueue_longest_running_processor_seconds",
      "How many seconds has the longest running processor for workqueue been running.",
      l,
    ),
  };
}
export type WorkQueueMetrics = ReturnType<typeof workQueueMetrics>;

/** A controller's reconciles, under controller-runtime's names (label `controller`). */
export function reconcileMetrics(r: Registry) {
  return {
    total: r.counter("controller_runtime_reconcile_total", "Total number of reconciliations per controller", ["controller", "result"]),
    errors: r.counter("controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller", ["controller"]),
    terminal: r.counter(
      "controller_runtime_terminal_reconcile_errors_total",
      "Total number of terminal reconciliation errors per controller",
      ["controller"],
    ),
    time: r.histogram(
      "controller_runtime_reconcile_time_seconds",
      "Length of time per reconciliation per controller",
      ["controller"],
      RECONCILE_BUCKETS,
    ),
    maxConcurrent: r.gauge("controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller", [
      "controller",
    ]),
    activeWorkers: r.gauge("controller_runtime_active_workers", "Number of currently used workers per controller", ["controller"]),
    // gavel's: of the errors, lost write races (409), retried like any transient error.
    conflicts: r.counter("gavel_reconcile_conflicts_total", "Reconciliation errors that were conflicts (HTTP 409) per controller", [
      "controller",
    ]),
    statusWrites: r.counter("gavel_status_writes_total", "Status writes the API server accepted per controller", ["controller"]),
    podsCreated: r.counter("gavel_pods_created_total", "Pods created per controller", ["controller"]),
    childrenCreated: r.counter("gavel_child_executions_created_total", "Judge child Executions created per controller", ["controller"]),
  };
}
export type ReconcileMetrics = ReturnType<typeof reconcileMetrics>;

/** client-go's leader election status: 1 while this replica holds the Lease `name`. */
export function leaderElectionMetric(r: Registry): Gauge {
  return r.gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
    ["name"],
  );
}

/** The tool-call gate's decisions and its guard's latency. */
export function gateMetrics(r: Registry) {
  return {
    toolCalls: r.counter(
      "gavel_tool_calls_total",
      "Tool calls decided and stored by this gate, by decision, what decided it (guard or judge) and the guard check that blocked it (none otherwise)",
      ["decision", "decided_by", "check"],
    ),
    guardSeconds: r.histogram("gavel_guard_duration_seconds", "Time the guard's seven checks took per tool call", [], GUARD_BUCKETS),
    decisionSeconds: r.histogram(
      "gavel_tool_call_decision_duration_seconds",
      "Time from a proposal to its decision (the guard, and the judges of judged calls)",
      ["decided_by"],
      SLOW_BUCKETS,
    ),
    publishLag: r.histogram(
      "gavel_gate_event_publish_lag_seconds",
      "Time from a gate event (a tool call proposed or decided, a tool judge started or finished) to its acknowledged publish on the event stream",
      [],
      SLOW_BUCKETS,
    ),
  };
}
export type GateMetrics = ReturnType<typeof gateMetrics>;

/** Outcomes of the outer loop: Executions, iterations, judge children. */
export function executionMetrics(r: Registry) {
  return {
    executions: r.counter("gavel_executions_total", "Executions (top-level runs) that ended, by phase", ["phase"]),
    iterations: r.counter("gavel_iterations_total", "Iterations that ended, by outcome (passed, refining, failed)", ["outcome"]),
    judgeSeconds: r.histogram(
      "gavel_judge_duration_seconds",
      "Time from a judge child's start to its verdict or rejection, by purpose (validation, tool_validation)",
      ["purpose"],
      SLOW_BUCKETS,
    ),
    judgeResults: r.counter(
      "gavel_judge_results_total",
      "Judge children that ended, by purpose and result: verdict, or the rejection reason (timed_out, failed, cancelled, malformed_output, ...)",
      ["purpose", "result"],
    ),
    kubeEventsPending: r.gauge(
      "gavel_kube_events_pending",
      "Kubernetes Events on Executions queued or being sent (they go out off the reconcile's path)",
    ),
  };
}
export type ExecutionMetrics = ReturnType<typeof executionMetrics>;

/** The event stream publisher (engine events to JetStream). */
export function eventStreamMetrics(r: Registry) {
  return {
    lag: r.histogram(
      "gavel_event_stream_publish_lag_seconds",
      "Time from an event (its status write) to its acknowledged publish on the event stream",
      [],
      SLOW_BUCKETS,
    ),
  };
}

/** The process: start time, CPU, memory, event loop (names of Prometheus' client libraries). */
export function processMetrics(r: Registry): void {
  const started = Date.now() / 1000 - process.uptime();
  r.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", [], () => [[{}, Math.round(started)]]);
  r.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", [], () => {
    const u = process.cpuUsage();
    return [[{}, (u.user + u.system) / 1e6]];
  });
  r.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", [], () => [[{}, process.memoryUsage.rss()]]);
  r.gauge("nodejs_heap_size_used_bytes", "Process heap size used from Node.js in bytes.", [], () => [[{}, process.memoryUsage().heapUsed]]);
}

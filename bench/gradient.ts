// GradientResult parsing of a 1 MiB judge output, against native and hand-written linear
// passes over the same bytes measured in the same run (target: p50 under 5 ms).
import { parseGradientResult } from "../src/engine/gradient.js";
import type { BenchResult, BenchSuite } from "./types.js";

const MIB = 1 << 20;
const TARGET_MS = 5;
const VERDICT = { score: 0.82, confidence: 0.91, reasoning: "tests pass; one lint warning" };

/** About 1 MiB of judge transcript: tool logs with braces, quotes, JSON fragments and paths. */
export function transcript(bytes = MIB): string {
  const lines = [
    '[tool] cmd.run {"command": "npm test", "cwd": "/workspace"} -> exit 0',
    '  PASS src/a.test.ts (12 tests) {"duration_ms": 231}',
    '  function f(x) { return { y: x }; } // quoted "source" with {braces}',
    "The worker wrote /workspace/out.json; I checked it against the task.",
    '  {"level":"info","msg":"compiled","files":["a.ts","b.ts"]}',
  ];
  const chunk = lines.join("\n") + "\n";
  return chunk.repeat(Math.ceil(bytes / chunk.length)).slice(0, bytes);
}

function p50(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

// A plain JS pass over every character: the least any scanner of the text must do.
function linearScan(text: string): number {
  let braces = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x7d || c === 0x22) braces++;
  }
  return braces;
}

function checkVerdict(outcome: ReturnType<typeof parseGradientResult>, what: string): void {
  if (!outcome.ok || outcome.result.score !== VERDICT.score) {
    throw new Error(`${what}: the parser did not return the embedded verdict (${outcome.ok ? "wrong verdict" : outcome.detail})`);
  }
}

/**
 * Times `subject` and `baseline` alternately, `runs` times each after a warm-up, so that
 * load on a shared machine falls on both alike; returns the two p50s in milliseconds.
 */
function paired(runs: number, subject: () => void, baseline: () => void): { value: number; base: number } {
  for (let i = 0; i < 5; i++) {
    subject();
    baseline();
  }
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < runs; i++) {
    let t = performance.now();
    subject();
    a.push(performance.now() - t);
    t = performance.now();
    baseline();
    b.push(performance.now() - t);
  }
  return { value: p50(a), base: p50(b) };
}

/**
 * The text as a runtime hands it over: decoded from the bytes it captured (capped-demux.ts),
 * so one flat string, not the rope a template literal builds, which V8 reads more slowly.
 */
function decoded(text: string): string {
  return Buffer.from(text, "utf8").toString("utf8");
}

/** Runs the four measurements; `runs` is lowered by the suite's own test. */
export function runGradientBench(runs = 31): BenchResult[] {
  const filler = decoded(transcript(MIB));
  const fenced = "```json\n" + JSON.stringify(VERDICT, null, 2) + "\n```\n";
  // The contract case: the verdict is printed last.
  const last = decoded(`${filler}\n${fenced}`);
  // A prose object after the verdict sends the parser through its full two-way search.
  const full = decoded(`${filler}\n${fenced}That is all {}.\n`);
  const embedded = JSON.stringify({ transcript: filler, ...VERDICT });
  checkVerdict(parseGradientResult(last), "verdict last");
  checkVerdict(parseGradientResult(full), "full search");

  let sink = 0;
  const jsonParse = (): void => {
    sink += (JSON.parse(embedded) as { score: number }).score;
  };
  const scan = (): void => {
    sink += linearScan(full);
  };
  const fast = paired(runs, () => checkVerdict(parseGradientResult(last), "verdict last"), jsonParse);
  const slowVsJson = paired(runs, () => checkVerdict(parseGradientResult(full), "full search"), jsonParse);
  const slowVsScan = paired(runs, () => checkVerdict(parseGradientResult(full), "full search"), scan);
  const none = paired(
    runs,
    () => {
      if (parseGradientResult(filler).ok) throw new Error("no verdict: the parser found one in a transcript without any");
    },
    scan,
  );
  if (Number.isNaN(sink)) throw new Error("unreachable: keeps the baselines from being optimised away");

  const result = (name: string, baselineName: string, m: { value: number; base: number }, notes: string): BenchResult => ({
    name,
    baselineName,
    baseline: m.base,
    value: m.value,
    unit: "ms",
    ratio: m.value / m.base,
    target: `p50 < ${TARGET_MS} ms`,
    met: m.value < TARGET_MS,
    notes,
  });
  return [
    result(
      "gradient parse 1 MiB, verdict last, p50",
      "JSON.parse of the same 1 MiB with the verdict embedded",
      fast,
      "scans back from the last } only",
    ),
    result(
      "gradient parse 1 MiB, full search, p50",
      "JSON.parse of the same 1 MiB with the verdict embedded",
      slowVsJson,
      "a prose {} after the verdict forces the full search: key search, forward and backward brace scans",
    ),
    result(
      "gradient parse 1 MiB, full search, p50 (vs scan)",
      "charCodeAt pass over the same 1 MiB",
      slowVsScan,
      "ratio = the full search over one bare charCodeAt pass",
    ),
    result(
      "gradient parse 1 MiB without a verdict, p50",
      "charCodeAt pass over the same 1 MiB",
      none,
      "rejected after one search for verdict field names",
    ),
  ];
}

export const suite: BenchSuite = {
  name: "gradient",
  needs: [],
  run: () => Promise.resolve(runGradientBench()),
};

// `make bench`: runs every suite, prints a table of ratios against same-run baselines and
// writes the results as JSON (argument 1, default bench-results.json in the cwd).
import { writeFile } from "node:fs/promises";
import { cpus, totalmem } from "node:os";
import { suites } from "./suites.js";
import type { BenchResult } from "./types.js";
import { messageOf } from "../src/errors.js";

function row(r: BenchResult): string {
  const fmt = (n: number): string => (Math.abs(n) >= 100 ? n.toFixed(0) : n.toPrecision(3));
  return `| ${r.name} | ${fmt(r.value)} ${r.unit} | ${r.baselineName}: ${fmt(r.baseline)} ${r.unit} | ${r.ratio.toFixed(2)} | ${r.target} | ${r.met ? "yes" : "NO"} |`;
}

async function main(): Promise<number> {
  const out = process.argv[2] ?? "bench-results.json";
  const only = process.env.GAVEL_BENCH;
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? "unknown"}), ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
  const date = new Date().toISOString().slice(0, 10);
  const results: BenchResult[] = [];
  const failures: string[] = [];
  const unknown = (only ?? "").split(",").filter((n) => n !== "" && !suites.some((s) => s.name === n));
  if (unknown.length > 0) {
    process.stderr.write(
      `[bench] GAVEL_BENCH names no suite: ${unknown.join(", ")}; the suites: ${suites.map((s) => s.name).join(", ")}\n`,
    );
    return 2;
  }
  for (const suite of suites) {
    if (only !== undefined && only !== "" && !only.split(",").includes(suite.name)) continue;
    process.stderr.write(`[bench] ${suite.name} ...\n`);
    try {
      results.push(...(await suite.run()));
    } catch (err) {
      failures.push(`${suite.name}: ${messageOf(err)}`);
    }
  }
  const lines = [
    `gavel bench, ${date}, ${machine}`,
    "",
    "| benchmark | value | baseline (same run) | ratio | target | met |",
    "|---|---|---|---|---|---|",
    ...results.map(row),
  ];
  const notes = [...new Set(results.flatMap((r) => (r.notes !== undefined ? [r.notes] : [])))];
  if (notes.length > 0) lines.push("", ...notes.map((n) => `- ${n}`));
  process.stdout.write(lines.join("\n") + "\n");
  for (const f of failures) process.stderr.write(`[bench] suite failed: ${f}\n`);
  await writeFile(out, JSON.stringify({ date, machine, results, failures }, null, 2) + "\n");
  return failures.length === 0 ? 0 : 1;
}

process.exitCode = await main();

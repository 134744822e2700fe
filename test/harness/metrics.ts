// Reading a Prometheus text exposition in tests: the samples of a scrape, sums over label
// filters, and promtool's own verdict on it (test/harness/build-promtool.sh builds it).
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Cluster } from "./cluster.js";
import { run } from "./exec.js";
import { RELEASE_NAMESPACE, type ChartController } from "./gavel-chart.js";
import { GAVEL_CACHE } from "./paths.js";

/** Mirrors lib.sh's PROMTOOL_VERSION. */
export const PROMTOOL = join(GAVEL_CACHE, "promtool", "v0.316.0", "bin", "promtool");

/** One sample: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a text exposition (comments skipped). */
export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] ?? ""] = (l[2] ?? "").replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    out.push({ name: m[1] ?? "", labels, value: Number(m[3]) });
  }
  return out;
}

/** Values of metric `name` by the JSON of the labels in `by`, summed over the others. */
export function sumBy(samples: readonly Sample[], name: string, by: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name) continue;
    const key = JSON.stringify(Object.fromEntries(by.map((l) => [l, s.labels[l] ?? ""])));
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

/** `promtool check metrics` of a scrape: its findings (empty when clean). Throws when promtool is not built. */
export async function promtoolCheck(text: string): Promise<{ code: number; findings: string }> {
  if (!existsSync(PROMTOOL)) throw new Error(`${PROMTOOL} is missing: run test/harness/build-promtool.sh (make test-e2e does)`);
  const r = await run(PROMTOOL, ["check", "metrics"], { stdin: text });
  return { code: r.code, findings: (r.stdout + r.stderr).trim() };
}

/**
 * The /metrics of every chart-installed controller pod, through the API server's pod proxy
 * to the container port named `metrics` (as a scraper inside the cluster reads it).
 */
export async function scrapeControllers(cluster: Cluster, controller: ChartController): Promise<string[]> {
  const out: string[] = [];
  for (const pod of await controller.pods()) {
    const port = pod.spec?.containers[0]?.ports?.find((p) => p.name === "metrics")?.containerPort;
    if (port === undefined) throw new Error(`pod ${pod.metadata?.name ?? ""} has no container port named metrics`);
    const r = await cluster.kubectl([
      "get",
      "--raw",
      `/api/v1/namespaces/${RELEASE_NAMESPACE}/pods/${pod.metadata?.name ?? ""}:${port}/proxy/metrics`,
    ]);
    if (r.code !== 0) throw new Error(`scraping ${pod.metadata?.name ?? ""}: ${r.stderr}`);
    out.push(r.stdout);
  }
  return out;
}

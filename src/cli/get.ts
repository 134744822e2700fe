// `gavel get`: lists Executions, Agents or GuardPolicies from the API server with kubectl's
// conventions (-n, -A, -l, -o wide|yaml|json|name, --watch, --no-headers). Executions are
// listed as trees: each judge child right under the Execution it judges, indented.
import { stringify } from "yaml";
import type { Agent, Execution, GuardPolicy } from "../api/types.js";
import { ExitCode, UsageError, type Command, type CommandIO } from "./command.js";
import { messageOf, NotFoundError, typedError } from "../errors.js";
import { parseFlags } from "./flags.js";
import { connectKube, getObject, KUBE_FLAGS, listObjects, type GavelObject, type Kube } from "./kube.js";
import { treeOrder } from "./execution-view.js";
import { resolveResource, type Resource } from "./resources.js";
import { age, fixed2, oneLine, renderTable } from "./table.js";
import { watchObjects } from "./watch.js";

const OUTPUTS = ["", "wide", "yaml", "json", "name"] as const;
type Output = (typeof OUTPUTS)[number];

/** A row of the table: its cells, plus the tree depth of an Execution (0 for a top-level one). */
interface Row {
  cells: string[];
}

function condition(obj: Agent | GuardPolicy, type: string): string {
  return obj.status?.conditions?.find((c) => c.type === type)?.status ?? "Unknown";
}

function validatorTypes(a: Agent): string {
  const v = a.spec.execution?.validation;
  return Array.isArray(v) ? v.map((x) => x.type).join(",") : v !== undefined ? "judge-output" : "<none>";
}

function judgesOf(a: Agent): string {
  const v = a.spec.execution?.validation;
  if (!Array.isArray(v)) return "<none>";
  const names = v.flatMap((x) => (x.type === "semantic" ? [x.judge_agent] : x.type === "multi_judge" ? x.judges : []));
  return names.length === 0 ? "<none>" : names.join(",");
}

/** Header and cells of one object, by kind; `wide` adds kubectl's priority-1 columns. */
export function columns(r: Resource, wide: boolean): string[] {
  switch (r.kind) {
    case "Execution":
      return ["NAME", "AGENT", "PHASE", "ITERATION", "SCORE", "AGE", ...(wide ? ["PURPOSE", "VERDICT", "PARENT", "MESSAGE"] : [])];
    case "Agent":
      return ["NAME", "ROLE", "MODE", "VALIDATION", "READY", "AGE", ...(wide ? ["IMAGE", "JUDGES", "TOOL-JUDGES"] : [])];
    case "GuardPolicy":
      return ["NAME", "ENTRIES", "READY", "AGE", ...(wide ? ["COUNTS", "REVOKED"] : [])];
  }
}

/** The verdict column of a judge child: score/confidence, or the rejection. */
function verdictCell(ex: Execution): string {
  const st = ex.status;
  if (st?.verdict !== undefined) return `${fixed2(st.verdict.score)}/${fixed2(st.verdict.confidence)}`;
  if (st?.rejection !== undefined) return `rejected: ${st.rejection}`;
  return ex.spec.parent !== undefined ? "<pending>" : "";
}

/** An Execution's row: its own columns, with -o wide its parent, verdict and message. */
function executionCells(ex: Execution, name: string, wide: boolean, now: number): string[] {
  const st = ex.status;
  const base = [name, ex.spec.agentRef.name, st?.phase ?? "Pending", st?.iteration !== undefined ? String(st.iteration) : "", fixed2(st?.score), age(ex.metadata.creationTimestamp, now)];
  if (!wide) return base;
  const p = ex.spec.parent;
  return [...base, p !== undefined ? `${p.purpose}:i${p.iteration}/v${p.validatorIndex}` : "", verdictCell(ex), p?.name ?? "", oneLine(st?.message, 80)];
}

/** An Agent's row: role, mode, validators, readiness; with -o wide its image and judges. */
function agentCells(a: Agent, name: string, wide: boolean, now: number): string[] {
  const base = [name, a.metadata.labels?.role ?? "", a.spec.execution?.mode ?? "", validatorTypes(a), condition(a, "Ready"), age(a.metadata.creationTimestamp, now)];
  if (!wide) return base;
  const toolJudges = (a.spec.execution?.tool_validation ?? []).map((t) => t.judge_agent);
  return [...base, a.spec.runtime?.image ?? "<default>", judgesOf(a), toolJudges.length === 0 ? "<none>" : toolJudges.join(",")];
}

/** A GuardPolicy's row: its entry count and readiness; with -o wide the counts by table and the revoked tools. */
function guardPolicyCells(g: GuardPolicy, name: string, wide: boolean, now: number): string[] {
  const counts = g.status?.counts ?? {};
  const entries = Object.values(counts).reduce((a, b) => a + b, 0);
  const base = [name, g.status?.counts !== undefined ? String(entries) : "", condition(g, "Ready"), age(g.metadata.creationTimestamp, now)];
  if (!wide) return base;
  const revoked = (g.spec.revoked_tools ?? []).map((t) => t.tool);
  return [...base, Object.entries(counts).map(([k, v]) => `${k}=${v}`).join(",") || "<none>", revoked.length === 0 ? "<none>" : revoked.join(",")];
}

/** One object's row under columns(r, wide); `depth` indents a child under its parent (--tree). */
export function cells(r: Resource, obj: GavelObject, wide: boolean, now: number, depth = 0): string[] {
  const name = depth === 0 ? obj.metadata.name : `${"   ".repeat(depth - 1)}└─ ${obj.metadata.name}`;
  switch (r.kind) {
    case "Execution":
      return executionCells(obj as Execution, name, wide, now);
    case "Agent":
      return agentCells(obj as Agent, name, wide, now);
    case "GuardPolicy":
      return guardPolicyCells(obj as GuardPolicy, name, wide, now);
  }
}

/** What kubectl prints for -o json/yaml: the object without managedFields (noise for a reader). */
function printable(obj: GavelObject): GavelObject {
  const copy = structuredClone(obj) as GavelObject & { metadata: { managedFields?: unknown } };
  delete copy.metadata.managedFields;
  return copy;
}

function serialize(objs: GavelObject[], output: "json" | "yaml", asList: boolean): string {
  const value = asList ? { apiVersion: "v1", kind: "List", items: objs.map(printable), metadata: { resourceVersion: "" } } : printable(objs[0] as GavelObject);
  return output === "json" ? `${JSON.stringify(value, null, 4)}\n` : stringify(value);
}

const FLAGS = {
  ...KUBE_FLAGS,
  "all-namespaces": { type: "boolean", short: "A", default: false },
  selector: { type: "string", short: "l" },
  output: { type: "string", short: "o", default: "" },
  watch: { type: "boolean", short: "w", default: false },
  "no-headers": { type: "boolean", default: false },
} as const;

export const getCommand: Command = {
  name: "get",
  summary: "list Executions, Agents or GuardPolicies (kubectl's -n, -A, -l, -o, --watch)",
  usage: "gavel get executions|agents|guardpolicies (ex|ag|gp) [NAME...] [-n NS | -A] [-l SELECTOR] [-o wide|yaml|json|name] [-w] [--no-headers] [--kubeconfig FILE] [--context NAME]",
  async run(argv, io) {
    const { values, positionals } = parseFlags({ args: argv, allowPositionals: true, options: FLAGS });
    const [what, ...names] = positionals;
    if (what === undefined) throw new UsageError("name a resource type: executions (ex), agents (ag) or guardpolicies (gp)");
    const r = resolveResource(what);
    const output = values.output as Output;
    if (!OUTPUTS.includes(output)) throw new UsageError(`-o must be one of wide, yaml, json, name, not "${values.output}"`);
    if (values["all-namespaces"] && values.namespace !== undefined) throw new UsageError("-A and -n cannot be used together");
    if (values["all-namespaces"] && names.length > 0) throw new UsageError("a NAME needs one namespace, not -A");
    if (names.length > 0 && values.selector !== undefined) throw new UsageError("NAME and -l cannot be used together");
    const kube = connectKube(values, io);
    const namespace = values["all-namespaces"] ? undefined : kube.namespace;
    const wide = output === "wide";
    const header = [...(namespace === undefined ? ["NAMESPACE"] : []), ...columns(r, wide)];
    const rowOf = (obj: GavelObject, depth: number): Row => ({
      cells: [...(namespace === undefined ? [obj.metadata.namespace ?? ""] : []), ...cells(r, obj, wide, Date.now(), depth)],
    });

    let items: GavelObject[];
    let resourceVersion = "";
    if (names.length > 0) {
      items = [];
      const missing: string[] = [];
      for (const n of names) {
        try {
          items.push(await getObject(kube, r, kube.namespace, n));
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
          missing.push(err.message);
        }
      }
      if (missing.length > 0) {
        write(io, items, r, output, header, rowOf, values["no-headers"], false);
        throw new NotFoundError(missing.join("; "));
      }
    } else {
      try {
        ({ items, resourceVersion } = await listObjects(kube, r, namespace, values.selector));
      } catch (err) {
        throw typedError(err, `listing ${r.plural}${namespace !== undefined ? ` in namespace "${namespace}"` : ""}`);
      }
      if (items.length === 0 && !values.watch && (output === "" || output === "wide")) {
        io.stderr.write(namespace === undefined ? `No ${r.plural} found.\n` : `No ${r.plural} found in ${namespace} namespace.\n`);
        return ExitCode.ok;
      }
    }
    write(io, items, r, output, header, rowOf, values["no-headers"], names.length !== 1);
    if (!values.watch) return ExitCode.ok;
    return watchRows(kube, r, namespace, values.selector, names, resourceVersion, io, (obj) => {
      if (output === "json" || output === "yaml") io.stdout.write(output === "json" ? `${JSON.stringify(printable(obj), null, 4)}\n` : `---\n${stringify(printable(obj))}`);
      else if (output === "name") io.stdout.write(`${r.plural}.100monkeys.ai/${obj.metadata.name}\n`);
      else io.stdout.write(renderTable(header, [rowOf(obj, depthOf(obj)).cells]).split("\n").slice(1).join("\n"));
    });
  },
};

/** Depth of an object in a watch, where the whole tree is not at hand: 1 for any judge child. */
function depthOf(obj: GavelObject): number {
  return obj.kind === "Execution" && (obj).spec.parent !== undefined ? 1 : 0;
}

function write(io: CommandIO, items: GavelObject[], r: Resource, output: Output, header: string[], rowOf: (o: GavelObject, depth: number) => Row, noHeaders: boolean, asList: boolean): void {
  if (items.length === 0 && output !== "json" && output !== "yaml") return;
  if (output === "json" || output === "yaml") {
    io.stdout.write(serialize(items, output, asList));
    return;
  }
  if (output === "name") {
    for (const o of items) io.stdout.write(`${r.plural}.100monkeys.ai/${o.metadata.name}\n`);
    return;
  }
  const ordered = r.kind === "Execution" ? treeOrder(items as Execution[]).map(({ ex, depth }) => rowOf(ex, depth)) : [...items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)).map((o) => rowOf(o, 0));
  const table = renderTable(header, ordered.map((x) => x.cells));
  io.stdout.write(noHeaders ? table.split("\n").slice(1).join("\n") : table);
}

/** Prints every later change until SIGINT/SIGTERM, as `kubectl get -w` does. */
async function watchRows(kube: Kube, r: Resource, namespace: string | undefined, selector: string | undefined, names: string[], resourceVersion: string, io: CommandIO, print: (obj: GavelObject) => void): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    await watchObjects(kube.kc, r, namespace ?? kube.namespace, {
      allNamespaces: namespace === undefined,
      ...(selector !== undefined ? { labelSelector: selector } : {}),
      ...(names.length === 1 ? { fieldSelector: `metadata.name=${names[0] ?? ""}` } : {}),
      resourceVersion,
      signal: stop.signal,
      onEvent: (_type, obj) => {
        if (names.length > 1 && !names.includes(obj.metadata.name)) return;
        print(obj);
      },
      onError: (err) => io.stderr.write(`gavel get: watch: ${messageOf(err)}; watching again\n`),
    });
    return ExitCode.ok;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

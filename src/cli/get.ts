// `gavel get`: lists Executions, Agents, GuardPolicies or ToolApprovals from the API server with kubectl's
// conventions (-n, -A, -l, -o wide|yaml|json|name, --watch, --no-headers). Executions are
// listed as trees: each judge child right under the Execution it judges, indented.
import { stringify } from "yaml";
import type { Execution, ToolApproval } from "../api/types.js";
import { ExitCode, UsageError, type Command, type CommandIO } from "./command.js";
import { messageOf, NotFoundError, typedError } from "../errors.js";
import { parseFlags } from "./flags.js";
import { connectKube, getObject, KUBE_FLAGS, listObjects, type GavelObject, type Kube } from "../views/kube.js";
import { treeOrder } from "../views/execution-view.js";
import { approvalOrder, cells, columns } from "../views/rows.js";
import type { Resource } from "../views/resources.js";
import { resolveResource } from "./resources.js";
import { renderTable } from "../views/table.js";
import { watchObjects } from "../views/watch.js";

const OUTPUTS = ["", "wide", "yaml", "json", "name"] as const;
type Output = (typeof OUTPUTS)[number];

/** A row of the table: its cells, plus the tree depth of an Execution (0 for a top-level one). */
interface Row {
  cells: string[];
}

/** What kubectl prints for -o json/yaml: the object without managedFields (noise for a reader). */
function printable(obj: GavelObject): GavelObject {
  const copy = structuredClone(obj) as GavelObject & { metadata: { managedFields?: unknown } };
  delete copy.metadata.managedFields;
  return copy;
}

function serialize(objs: GavelObject[], output: "json" | "yaml", asList: boolean): string {
  const value = asList
    ? { apiVersion: "v1", kind: "List", items: objs.map(printable), metadata: { resourceVersion: "" } }
    : printable(objs[0] as GavelObject);
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
  summary: "list Executions, Agents, GuardPolicies or ToolApprovals (kubectl's -n, -A, -l, -o, --watch)",
  usage:
    "gavel get executions|agents|guardpolicies|approvals (ex|ag|gp|ta) [NAME...] [-n NS | -A] [-l SELECTOR] [-o wide|yaml|json|name] [-w] [--no-headers] [--kubeconfig FILE] [--context NAME]",
  async run(argv, io) {
    const { values, positionals } = parseFlags({ args: argv, allowPositionals: true, options: FLAGS });
    const [what, ...names] = positionals;
    if (what === undefined)
      throw new UsageError("name a resource type: executions (ex), agents (ag), guardpolicies (gp) or approvals (toolapprovals, ta)");
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
      if (output === "json" || output === "yaml")
        io.stdout.write(output === "json" ? `${JSON.stringify(printable(obj), null, 4)}\n` : `---\n${stringify(printable(obj))}`);
      else if (output === "name") io.stdout.write(`${r.plural}.100monkeys.ai/${obj.metadata.name}\n`);
      else
        io.stdout.write(
          renderTable(header, [rowOf(obj, depthOf(obj)).cells])
            .split("\n")
            .slice(1)
            .join("\n"),
        );
    });
  },
};

/** Depth of an object in a watch, where the whole tree is not at hand: 1 for any judge child. */
function depthOf(obj: GavelObject): number {
  return obj.kind === "Execution" && obj.spec.parent !== undefined ? 1 : 0;
}

function write(
  io: CommandIO,
  items: GavelObject[],
  r: Resource,
  output: Output,
  header: string[],
  rowOf: (o: GavelObject, depth: number) => Row,
  noHeaders: boolean,
  asList: boolean,
): void {
  if (items.length === 0 && output !== "json" && output !== "yaml") return;
  if (output === "json" || output === "yaml") {
    io.stdout.write(serialize(items, output, asList));
    return;
  }
  if (output === "name") {
    for (const o of items) io.stdout.write(`${r.plural}.100monkeys.ai/${o.metadata.name}\n`);
    return;
  }
  const ordered =
    r.kind === "Execution"
      ? treeOrder(items as Execution[]).map(({ ex, depth }) => rowOf(ex, depth))
      : r.kind === "ToolApproval"
        ? approvalOrder(items as ToolApproval[]).map((o) => rowOf(o, 0))
        : [...items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)).map((o) => rowOf(o, 0));
  const table = renderTable(
    header,
    ordered.map((x) => x.cells),
  );
  io.stdout.write(noHeaders ? table.split("\n").slice(1).join("\n") : table);
}

/** Prints every later change until SIGINT/SIGTERM, as `kubectl get -w` does. */
async function watchRows(
  kube: Kube,
  r: Resource,
  namespace: string | undefined,
  selector: string | undefined,
  names: string[],
  resourceVersion: string,
  io: CommandIO,
  print: (obj: GavelObject) => void,
): Promise<number> {
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

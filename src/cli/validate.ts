// `gavel validate -f FILE|DIR`: checks manifests offline with the CRDs' schemas, their CEL rules
// and the cross-object rules, printing each problem as `file:doc#N: field.path: message`.
import { readdir, readFile, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { LineCounter, parseAllDocuments } from "yaml";
import { crossValidateAgent, crossValidateExecution, isJudge } from "../api/cross-validate.js";
import { isMap } from "../api/schema-dsl.js";
import type { Agent, Execution } from "../api/types.js";
import { validateManifest, type Problem } from "../api/validate.js";
import { knownEntrypoint } from "../children/images.js";
import { validateRegexPattern } from "../engine/re2.js";
import { ExitCode, UsageError, type Command } from "./command.js";
import { messageOf } from "../errors.js";

/** One finding of `gavel validate`, located in a file and a document of it (1-based). */
export interface Finding extends Problem {
  file: string;
  doc: number;
  /** Line of a YAML syntax error. */
  line?: number;
}

interface ParsedDoc {
  file: string;
  doc: number;
  value: unknown;
}

/** Expands files and directories (recursively, *.yaml / *.yml / *.json) in a stable order. */
export async function manifestFiles(paths: string[], cwd: string): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const abs = resolve(cwd, p);
    const st = await stat(abs).catch(() => undefined);
    if (st === undefined) throw new UsageError(`${p}: no such file or directory`);
    if (st.isDirectory()) {
      const entries = (await readdir(abs, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
      const children = entries.filter((e) => e.isDirectory() || /\.(ya?ml|json)$/.test(e.name)).map((e) => join(p, e.name));
      out.push(...(await manifestFiles(children, cwd)));
    } else out.push(p);
  }
  return out;
}

/** Parses one file's documents; YAML syntax errors become findings with their line. */
export function parseManifests(file: string, text: string): { docs: ParsedDoc[]; findings: Finding[] } {
  const lineCounter = new LineCounter();
  const docs: ParsedDoc[] = [];
  const findings: Finding[] = [];
  parseAllDocuments(text, { lineCounter }).forEach((d, i) => {
    if (d.errors.length > 0) {
      for (const e of d.errors) {
        const line = e.linePos?.[0].line ?? lineCounter.linePos(e.pos[0]).line;
        findings.push({
          file,
          doc: i + 1,
          line,
          path: "",
          message: `YAML syntax error at line ${line}: ${(e.message.split("\n")[0] ?? e.code).replace(/ at line \d+, column \d+:?$/, "")}`,
          severity: "error",
        });
      }
      return;
    }
    const value: unknown = d.toJS();
    if (value === null || value === undefined) return; // an empty document (e.g. a trailing ---)
    docs.push({ file, doc: i + 1, value });
  });
  return { docs, findings };
}

/**
 * Validates documents together: each on its own, then the Agents against each other. A judge
 * not among the documents is only a warning, since it may already be deployed.
 */
export function validateDocuments(docs: ParsedDoc[]): Finding[] {
  const findings: Finding[] = [];
  const agents: { d: ParsedDoc; agent: Agent }[] = [];
  const executions: { d: ParsedDoc; execution: Execution }[] = [];
  for (const d of docs) {
    const problems = [...validateManifest(d.value), ...regexWarnings(d.value)];
    findings.push(...problems.map((p) => ({ ...p, file: d.file, doc: d.doc })));
    // Cross-object rules need a well-formed Agent; a malformed one already has its errors.
    if (
      !problems.some((p) => p.severity === "error") &&
      isMap(d.value) &&
      d.value.kind === "Agent" &&
      isMap(d.value.metadata) &&
      isMap(d.value.spec ?? {})
    ) {
      agents.push({ d, agent: d.value as unknown as Agent });
    }
    if (!problems.some((p) => p.severity === "error") && isMap(d.value) && d.value.kind === "Execution" && isMap(d.value.metadata)) {
      executions.push({ d, execution: d.value as unknown as Execution });
    }
  }
  const byKey = new Map(agents.map(({ agent }) => [key(agent), agent]));
  for (const { d, agent } of agents) {
    const ns = agent.metadata.namespace ?? "";
    for (const p of crossValidateAgent({ ...agent, spec: agent.spec ?? {} }, (n) => byKey.get(`${ns}/${n}`))) {
      const severity = p.reason === "JudgeNotFound" ? "warning" : "error";
      const message =
        p.reason === "JudgeNotFound"
          ? `${p.message.replace(" in this namespace", " among the given manifests")} (fine if it is already deployed)`
          : p.message;
      findings.push({ file: d.file, doc: d.doc, path: p.path, message, severity });
    }
  }
  for (const { d, execution } of executions) {
    const ns = execution.metadata.namespace ?? "";
    for (const p of crossValidateExecution(execution, (n) => byKey.get(`${ns}/${n}`))) {
      const missing = p.reason === "AgentNotFound";
      const message = missing
        ? `${p.message.replace(" in this namespace", " among the given manifests")} (fine if it is already deployed)`
        : p.message;
      findings.push({ file: d.file, doc: d.doc, path: p.path, message, severity: missing ? "warning" : "error" });
    }
  }
  return findings;
}

/**
 * regex validators whose pattern RE2 refuses: the server stores them, the engine fails the
 * validator at run time, so say it now (a warning: the verdict stays the server's).
 */
function regexWarnings(doc: unknown): Problem[] {
  if (!isMap(doc) || doc.kind !== "Agent" || !isMap(doc.spec) || !isMap(doc.spec.execution)) return [];
  const validation = doc.spec.execution.validation;
  if (!Array.isArray(validation)) return [];
  const merged = mergedStdoutImage(doc.spec);
  return validation.flatMap((v: unknown, i) => {
    if (!isMap(v) || v.type !== "regex" || typeof v.pattern !== "string") return [];
    const error = validateRegexPattern(v.pattern);
    const out: Problem[] =
      error === undefined
        ? []
        : [
            {
              path: `spec.execution.validation[${i}].pattern`,
              message: `${error}; the validator will fail every iteration`,
              severity: "warning",
            },
          ];
    if (merged !== undefined && (v.target === undefined || v.target === "stdout")) {
      out.push({
        path: `spec.execution.validation[${i}]`,
        message:
          `reads stdout, but gavel does not know the program of image ${merged} (no spec.runtime.command, not an image gavel builds): ` +
          "on Kubernetes its pod log merges stderr into stdout, so a log line can break the match (local mode keeps them apart); declare spec.runtime.command (ADR 0041)",
        severity: "warning",
      });
    }
    return out;
  });
}

/** The image of an Agent spec whose pods on Kubernetes merge stderr into stdout (its program unknown to gavel), if so. */
function mergedStdoutImage(spec: Record<string, unknown>): string | undefined {
  const runtime = isMap(spec.runtime) ? spec.runtime : {};
  if (typeof runtime.image !== "string" || (Array.isArray(runtime.command) && runtime.command.length > 0)) return undefined;
  return knownEntrypoint(runtime.image) === undefined ? runtime.image : undefined;
}

function key(a: Agent): string {
  return `${a.metadata.namespace ?? ""}/${a.metadata.name}`;
}

/** `file:doc#N: path: message`, with "warning: " in front of warnings. */
export function formatFinding(f: Finding): string {
  const where = f.line === undefined ? `${f.file}:doc#${f.doc}` : `${f.file}:${f.line}:doc#${f.doc}`;
  return `${where}: ${f.severity === "warning" ? "warning: " : ""}${f.path === "" ? "" : `${f.path}: `}${f.message}`;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += typeof chunk === "string" ? chunk : chunk.toString("utf8");
  return text;
}

function parseFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: { filename: { type: "string", short: "f", multiple: true }, quiet: { type: "boolean", short: "q", default: false } },
    });
  } catch (err) {
    throw new UsageError(messageOf(err));
  }
}

export const validateCommand: Command = {
  name: "validate",
  summary: "check Agent, Execution and GuardPolicy manifests offline (schemas, rules, judge references)",
  usage: "gavel validate -f FILE|DIR|- [-f FILE|DIR|- ...] [--quiet]",
  async run(argv, io) {
    const { values, positionals } = parseFlags(argv);
    const paths = [...(values.filename ?? []), ...positionals];
    if (paths.length === 0) throw new UsageError("give at least one -f FILE|DIR");
    const files = await manifestFiles(
      paths.filter((p) => p !== "-"),
      io.cwd,
    );
    if (paths.includes("-")) files.unshift("-");
    const docs: ParsedDoc[] = [];
    const findings: Finding[] = [];
    for (const file of files) {
      const text = file === "-" ? await readAll(io.stdin) : await readFile(resolve(io.cwd, file), "utf8");
      const parsed = parseManifests(file === "-" ? "<stdin>" : file, text);
      docs.push(...parsed.docs);
      findings.push(...parsed.findings);
    }
    findings.push(...validateDocuments(docs));
    findings.sort((a, b) => a.file.localeCompare(b.file) || a.doc - b.doc);
    for (const f of findings) {
      if (f.severity === "error" || !values.quiet) io.stdout.write(`${formatFinding(f)}\n`);
    }
    const errors = findings.filter((f) => f.severity === "error").length;
    const judges = docs.filter((d) => isMap(d.value) && d.value.kind === "Agent" && isJudge(d.value as unknown as Agent)).length;
    io.stdout.write(
      `${files.length} file(s), ${docs.length} document(s) (${judges} judge(s)): ${errors === 0 ? "valid" : `${errors} error(s)`}\n`,
    );
    return errors === 0 ? ExitCode.ok : ExitCode.failed;
  },
};

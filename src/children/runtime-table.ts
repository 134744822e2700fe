// The runtime table: which image runs an Agent that names a language runtime
// (`spec.runtime.language` + `version`, as the reference's judge manifests do) instead of an
// image. gavel ships Python 3.11 and Node 20 (images built by test/harness/runtime-images.sh,
// each gavel's agent runtime on that language); operators add or replace entries with the
// chart's `runtimes:` values (a ConfigMap the controller reads) or `gavel run --runtimes`.
import { readFile } from "node:fs/promises";
import { Ajv, type ErrorObject } from "ajv";
import { parse } from "yaml";
import type { Agent } from "../api/types.js";
import { gavelVersion } from "../version.js";
import { AGENT_ENTRYPOINT, knownEntrypoint } from "./images.js";
import { messageOf } from "../errors.js";

/** One language runtime: the image that runs Agents declaring it, with extra env for its containers. */
export interface RuntimeEntry {
  /** Lower-case language name, e.g. "python". */
  language: string;
  /** The version a manifest names, e.g. "3.11" (matched exactly, as written). */
  version: string;
  image: string;
  /** Env set in every container of this runtime (e.g. its model endpoint); the workload's own env wins. */
  env?: Record<string, string>;
  /**
   * The image's program (its ENTRYPOINT and CMD), when known: on Kubernetes gavel runs it under
   * gavel-launch so stdout stays apart from stderr; without it the pod log merges them.
   */
  command?: string[];
  /** Picked when a manifest names the language without a version; at most one per language. */
  default?: boolean;
}

/** The table: entries in order; a later entry with the same language and version replaces an earlier one. */
export type RuntimeTable = readonly RuntimeEntry[];

/** An image for an Agent, or why there is none (naming the manifest field). */
export type RuntimeChoice =
  | { image: string; env: Record<string, string>; runtime?: RuntimeEntry; entrypoint?: readonly string[] }
  | { problem: string; field: string };

/** The runtimes gavel ships, at the images of this build (`make images` tags them :dev and :<version>). */
export function builtinRuntimes(tag = gavelVersion()): RuntimeEntry[] {
  return [
    { language: "python", version: "3.11", image: `gavel/runtime-python-3.11:${tag}`, default: true, command: [...AGENT_ENTRYPOINT] },
    { language: "node", version: "20", image: `gavel/runtime-node-20:${tag}`, default: true, command: [...AGENT_ENTRYPOINT] },
  ];
}

/** A table file could not be read; the message names the file and the entry. */
export class RuntimeTableError extends Error {
  override readonly name = "RuntimeTableError";
}

/**
 * Parses a runtime table (YAML or JSON): a list of entries, or `{runtimes: [...]}`. Each entry
 * needs language, version and image; env is a map of strings.
 */
export function parseRuntimeTable(text: string, source = "runtime table"): RuntimeEntry[] {
  let doc: unknown;
  try {
    doc = parse(text) as unknown;
  } catch (err) {
    throw new RuntimeTableError(`${source}: not valid YAML: ${(err as Error).message}`);
  }
  const list = Array.isArray(doc)
    ? doc
    : isRecord(doc) && Array.isArray(doc.runtimes)
      ? doc.runtimes
      : doc === null || doc === undefined
        ? []
        : undefined;
  if (list === undefined) throw new RuntimeTableError(`${source}: expected a list of runtimes (or {runtimes: [...]})`);
  if (!validateEntries(list))
    throw new RuntimeTableError((validateEntries.errors ?? []).map((e) => entryProblem(e, list, source)).join("; "));
  return list.map((raw) => ({
    language: raw.language.trim().toLowerCase(),
    version: raw.version.trim(),
    image: raw.image.trim(),
    ...(raw.env !== undefined ? { env: raw.env } : {}),
    ...(raw.default === true ? { default: true } : {}),
    ...(raw.command !== undefined ? { command: raw.command } : {}),
  }));
}

const FIELDS = ["language", "version", "image", "env", "default", "command"] as const;
const TEXT = { type: "string", pattern: "\\S" } as const;

/** One entry of a runtime table as its file writes it. */
interface RawEntry {
  language: string;
  version: string;
  image: string;
  env?: Record<string, string>;
  default?: boolean;
  command?: string[];
}

/** The schema of a table's entries, compiled once. */
const validateEntries = new Ajv({ allErrors: true, strict: true }).compile<RawEntry[]>({
  type: "array",
  items: {
    type: "object",
    additionalProperties: false,
    required: ["language", "version", "image"],
    properties: {
      language: TEXT,
      version: TEXT,
      image: TEXT,
      env: { type: "object", additionalProperties: { type: "string" } },
      default: { type: "boolean" },
      command: { type: "array", minItems: 1, items: { type: "string", minLength: 1 } },
    },
  },
});

/** What a schema error says about an entry, naming the file, the entry and the field. */
function entryProblem(e: ErrorObject, list: unknown[], source: string): string {
  const [index = "", field = "", ...rest] = e.instancePath.split("/").slice(1);
  const at = `${source}: runtimes[${index}]`;
  const key = e.keyword === "required" ? (e.params as { missingProperty: string }).missingProperty : field;
  if (e.keyword === "additionalProperties")
    return `${at}.${(e.params as { additionalProperty: string }).additionalProperty} is not a known field (${FIELDS.join(", ")})`;
  if (key === "") return `${at} must be a mapping`;
  const value = (list[Number(index)] as Record<string, unknown> | undefined)?.[key];
  // YAML reads an unquoted 3.10 as the number 3.1: such a version must be quoted.
  if (key === "version" && typeof value === "number")
    return `${at}.version must be a quoted string (got the number ${value}; write "${value}")`;
  if (key === "env") return `${at}.env must be a map of strings${rest.length > 0 ? ` (${rest.join(".")} is not a string)` : ""}`;
  if (key === "default") return `${at}.default must be true or false`;
  if (key === "command")
    return `${at}.command must be a non-empty list of non-empty strings (the image's program, e.g. [python3, /app/main.py])`;
  return `${at}.${key} must be a non-empty string`;
}

/** The built-in runtimes with the operator's entries over them (same language and version: replaced). */
export function runtimeTable(extra: readonly RuntimeEntry[] = [], builtins: readonly RuntimeEntry[] = builtinRuntimes()): RuntimeTable {
  const out: RuntimeEntry[] = [];
  for (const e of [...builtins, ...extra]) {
    const at = out.findIndex((o) => o.language === e.language && o.version === e.version);
    // A new default for a language takes the mark from the others.
    if (e.default === true) for (const o of out) if (o.language === e.language) delete o.default;
    if (at >= 0) out[at] = { ...e };
    else out.push({ ...e });
  }
  return out;
}

/** The table of a driver: the built-ins with the entries of `file` (YAML, see parseRuntimeTable) over them; only the built-ins without a file. */
export async function loadRuntimeTable(file: string | undefined): Promise<RuntimeTable> {
  if (file === undefined || file === "") return runtimeTable();
  const text = await readFile(file, "utf8").catch((err: unknown) => {
    throw new RuntimeTableError(`runtime table ${file}: ${messageOf(err)}`);
  });
  return runtimeTable(parseRuntimeTable(text, file));
}

/**
 * The image an Agent runs in: its `spec.runtime.image` when set, else the table's entry for
 * `spec.runtime.language` and `version` (the language's default entry when no version is
 * given), else `fallback` for an Agent with neither (a worker runs gavel's agent image, whose
 * program `fallbackEntrypoint` is). `entrypoint` is the image's program when gavel knows it.
 */
export function chooseRuntime(agent: Agent, table: RuntimeTable, fallback?: string, fallbackEntrypoint?: readonly string[]): RuntimeChoice {
  const r = agent.spec.runtime;
  if (r?.image !== undefined && r.image.trim() !== "") {
    const known = knownEntrypoint(r.image);
    return { image: r.image, env: {}, ...(known !== undefined ? { entrypoint: known } : {}) };
  }
  if (r?.language === undefined || r.language.trim() === "") {
    if (fallback !== undefined)
      return { image: fallback, env: {}, ...(fallbackEntrypoint !== undefined ? { entrypoint: fallbackEntrypoint } : {}) };
    return { problem: `Agent ${agent.metadata.name} names no image and no language runtime`, field: "spec.runtime" };
  }
  const language = r.language.trim().toLowerCase();
  const same = table.filter((e) => e.language === language);
  const known = (list: RuntimeTable) => list.map((e) => `${e.language} ${e.version}`).join(", ") || "none";
  if (same.length === 0) {
    return {
      problem: `spec.runtime.language: no runtime for "${r.language}" in the runtime table (known: ${known(table)})`,
      field: "spec.runtime.language",
    };
  }
  const version = r.version === undefined ? undefined : String(r.version).trim();
  const entry =
    version === undefined || version === ""
      ? (same.find((e) => e.default === true) ?? (same.length === 1 ? same[0] : undefined))
      : same.find((e) => e.version === version);
  if (entry === undefined) {
    const what = version === undefined || version === "" ? `no default version of ${language}` : `no runtime for ${language} ${version}`;
    return { problem: `spec.runtime.version: ${what} in the runtime table (known: ${known(same)})`, field: "spec.runtime.version" };
  }
  return {
    image: entry.image,
    env: { ...entry.env },
    runtime: entry,
    ...(entry.command !== undefined ? { entrypoint: entry.command } : {}),
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The image an Agent's containers run (for reading files baked into it): its own, its runtime's, else `fallback`; undefined when the table has none. */
export function agentImage(agent: Agent, table: RuntimeTable, fallback: string): string | undefined {
  const choice = chooseRuntime(agent, table, fallback);
  return "image" in choice ? choice.image : undefined;
}

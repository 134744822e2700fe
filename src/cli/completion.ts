// Shell completion. `gavel completion bash|zsh` prints a script that asks the hidden
// `gavel __complete WORDS...` for candidates; kubectl (>= 1.26) asks the same of a plugin
// through `kubectl_complete-gavel` (installed beside kubectl-gavel, see `make install`).
// Candidates come one per line, then cobra's ":<directive>" line that kubectl expects
// (4: no file completion; 0: the shell's default, files).
import { parseArgs } from "node:util";
import type { Execution } from "../api/types.js";
import { UsageError, type Command, type CommandIO } from "./command.js";
import { commands } from "./commands.js";
import { childrenOf, connectKube, listObjects } from "../views/kube.js";
import { RESOURCES } from "../views/resources.js";
import { resolveResource } from "./resources.js";

const DIRECTIVE_DEFAULT = 0;
const DIRECTIVE_NO_FILES = 4;

/** Flags of each command that completion offers; those ending in "=" take a value. */
const FLAGS: Record<string, string[]> = {
  get: [
    "-n=",
    "--namespace=",
    "-A",
    "--all-namespaces",
    "-l=",
    "--selector=",
    "-o=",
    "--output=",
    "-w",
    "--watch",
    "--no-headers",
    "--kubeconfig=",
    "--context=",
  ],
  describe: ["-n=", "--namespace=", "--kubeconfig=", "--context="],
  approve: ["--reason=", "-n=", "--namespace=", "--kubeconfig=", "--context="],
  deny: ["--reason=", "-n=", "--namespace=", "--kubeconfig=", "--context="],
  logs: ["-n=", "--namespace=", "--iteration=", "--judge=", "-f", "--follow", "--kubeconfig=", "--context="],
  ui: ["-n=", "--namespace=", "--addr=", "--nats=", "--nats-creds=", "--kubeconfig=", "--context="],
  replay: [
    "--policy=",
    "--from=",
    "--agent=",
    "--nats=",
    "--nats-creds=",
    "--run=",
    "--policy-only",
    "--controller-namespace=",
    "--all",
    "-o=",
    "--output=",
    "-n=",
    "--namespace=",
    "--kubeconfig=",
    "--context=",
  ],
  audit: ["--nats=", "--nats-creds=", "--run=", "--output-file=", "-n=", "--namespace=", "--kubeconfig=", "--context="],
  // guard check's, then tool-hash's --file.
  guard: [
    "--tool=",
    "--args=",
    "--agent=",
    "--policy=",
    "--history=",
    "--step=",
    "--capabilities=",
    "--live-hash=",
    "--home=",
    "--explain",
    "--file=",
  ],
};

/** Flags whose value is a file: the shell completes it. */
const FILE_FLAGS = ["--kubeconfig", "--agent", "--policy", "--file", "--from", "--nats-creds", "--output-file"];

/** Object names completion may look up; injected so the rules are tested without a cluster. */
export interface NameLookup {
  names(resource: string, namespace: string | undefined): Promise<string[]>;
  judges(execution: string, namespace: string | undefined): Promise<string[]>;
}

/** The value of -n/--namespace among the words, if given. */
function namespaceOf(words: string[]): string | undefined {
  const { values } = parseArgs({
    args: words,
    strict: false,
    allowPositionals: true,
    options: { namespace: { type: "string", short: "n" } },
  });
  return typeof values.namespace === "string" ? values.namespace : undefined;
}

type Candidates = { values: string[]; directive: number };

/** The positional words after the command (flags and their values left out). */
function positionalsOf(before: string[], flags: string[]): string[] {
  const positionals: string[] = [];
  for (let i = 1; i < before.length; i++) {
    const w = before[i] ?? "";
    if (w.startsWith("-")) {
      if (flags.includes(`${w}=`)) i++;
      continue;
    }
    positionals.push(w);
  }
  return positionals;
}

/** Candidates for the value of the flag `prev` (a flag that takes one). */
async function flagValue(
  prev: string,
  before: string[],
  flags: string[],
  lookup: NameLookup,
  pick: (values: string[]) => Candidates,
): Promise<Candidates> {
  if (prev === "-o" || prev === "--output") return pick(["wide", "yaml", "json", "name"]);
  // The execution is the first positional, wherever it stands among the flags (`logs -n NS EXEC --judge`).
  if (prev === "--judge")
    return pick(await lookup.judges(positionalsOf(before.slice(0, -1), flags)[0] ?? "", namespaceOf(before)).catch(() => []));
  if (FILE_FLAGS.includes(prev)) return { values: [], directive: DIRECTIVE_DEFAULT };
  return { values: [], directive: DIRECTIVE_NO_FILES };
}

/** Candidates for a positional word of command `cmd`, given the positionals before it. */
async function positional(
  cmd: string | undefined,
  positionals: string[],
  ns: string | undefined,
  lookup: NameLookup,
  pick: (values: string[]) => Candidates,
): Promise<Candidates> {
  switch (cmd) {
    case "get":
    case "describe":
      if (positionals.length === 0)
        return pick(
          RESOURCES.flatMap((r) => [r.plural, ...(cmd === "describe" ? [r.names[1] ?? ""] : []), r.names[r.names.length - 1] ?? ""]),
        );
      return pick(await lookup.names(positionals[0] ?? "", ns).catch(() => []));
    case "logs":
    case "replay":
      return positionals.length === 0 ? pick(await lookup.names("executions", ns).catch(() => [])) : pick([]);
    case "completion":
      return pick(positionals.length === 0 ? ["bash", "zsh"] : []);
    case "guard":
      return pick(positionals.length === 0 ? ["check", "tool-hash"] : []);
    case "audit":
      if (positionals.length === 0) return pick(["export"]);
      return positionals.length === 1 ? pick(await lookup.names("executions", ns).catch(() => [])) : pick([]);
    default:
      return { values: [], directive: DIRECTIVE_DEFAULT };
  }
}

/** Candidates for the last word, given the words before it (after "gavel"). */
export async function candidates(words: string[], lookup: NameLookup): Promise<Candidates> {
  const cur = words[words.length - 1] ?? "";
  const before = words.slice(0, -1);
  const pick = (values: string[]) => ({ values: values.filter((v) => v.startsWith(cur)), directive: DIRECTIVE_NO_FILES });
  if (before.length === 0) return pick([...commands.filter((c) => c.hidden !== true).map((c) => c.name), "--help", "--version"]);
  const [cmd] = before;
  const prev = before[before.length - 1] ?? "";
  const flags = FLAGS[cmd ?? ""] ?? [];
  if (flags.includes(`${prev}=`)) return flagValue(prev, before, flags, lookup, pick);
  if (cur.startsWith("-")) return pick(flags.map((f) => f.replace(/=$/, "")));
  return positional(cmd, positionalsOf(before, flags), namespaceOf(before), lookup, pick);
}

/** Looks names up on the cluster of the current kubeconfig. */
function clusterLookup(io: CommandIO): NameLookup {
  return {
    async names(resource, namespace) {
      const kube = connectKube({ namespace }, io);
      const { items } = await listObjects(kube, resolveResource(resource), kube.namespace);
      return items.map((o) => o.metadata.name);
    },
    async judges(execution, namespace) {
      const kube = connectKube({ namespace }, io);
      const children: Execution[] = await childrenOf(kube, kube.namespace, execution);
      return [...new Set(children.flatMap((c) => [c.spec.agentRef.name, c.metadata.name]))];
    },
  };
}

const BASH = `# gavel completion for bash; load with: source <(gavel completion bash)
_gavel() {
  local out directive
  out="$(gavel __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" || return
  directive="\${out##*:}"
  out="\${out%:*}"
  COMPREPLY=($(compgen -W "$out" -- "\${COMP_WORDS[COMP_CWORD]}"))
  if [ "\${#COMPREPLY[@]}" -eq 0 ] && [ "$directive" = 0 ]; then
    COMPREPLY=($(compgen -f -- "\${COMP_WORDS[COMP_CWORD]}"))
  fi
}
complete -F _gavel gavel
`;

const ZSH = `# gavel completion for zsh; load with: source <(gavel completion zsh)
autoload -U +X bashcompinit && bashcompinit
${BASH.split("\n").slice(1).join("\n")}`;

export const completionCommand: Command = {
  name: "completion",
  summary: "print a shell completion script (bash or zsh)",
  usage: "gavel completion bash|zsh",
  run(argv, io) {
    const [shell, ...rest] = argv;
    if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0] ?? ""}"`);
    if (shell === "bash") io.stdout.write(BASH);
    else if (shell === "zsh") io.stdout.write(ZSH);
    else throw new UsageError(shell === undefined ? "name a shell: bash or zsh" : `unknown shell "${shell}"; gavel completes bash and zsh`);
    return Promise.resolve(0);
  },
};

/** The hidden `gavel __complete WORDS...` (also what kubectl_complete-gavel runs). */
export const completeCommand: Command = {
  name: "__complete",
  summary: "print completion candidates for the given words",
  usage: "gavel __complete WORD... (the last one is the word being completed)",
  async run(argv, io) {
    const r = await candidates(argv.length === 0 ? [""] : argv, clusterLookup(io));
    io.stdout.write(`${r.values.map((v) => `${v}\n`).join("")}:${r.directive}\n`);
    return 0;
  },
};

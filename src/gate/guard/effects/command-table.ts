// The command table: what each command does (network egress and to where, running fetched or
// inline code, privilege changes, deleting or overwriting what, turning a protection off,
// reading files), including the options that change it. One entry per command; rules.ts
// decides what the effects mean for the call.
import type { ShellCommand } from "../shell/records.js";
import { classified, effect, type Effect } from "./effect.js";
import { has, parseOptions, valuesOf, type Options } from "./options.js";
import { INTERPRETERS, SHELLS } from "../command-names.js";
import { resolveTarget } from "./targets.js";

/** A command's effects; paths in targets are resolved against the command's directory. */
type Handler = (c: ShellCommand) => Effect[];

const set = (...xs: string[]): ReadonlySet<string> => new Set(xs);
const at = (c: ShellCommand, ps: readonly string[]): string[] => ps.filter((p) => p !== "" && p !== "-").map((p) => resolveTarget(p, c.cwd));
const none: Effect[] = [];

/** Network clients that fetch content (a pipe from one of them into a shell runs fetched code). */
export const FETCHERS: ReadonlySet<string> = set("curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET", "nc", "ncat", "netcat", "socat", "openssl", "telnet", "tftp", "ftp");
/** Clients that send whatever they read to a peer (a pipe into one of them leaves the machine). */
export const SENDERS: ReadonlySet<string> = set("curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "openssl", "ssh", "scp", "sftp", "ftp", "tftp", "http", "https", "xh", "mail", "sendmail", "mutt", "aws", "gsutil", "rclone", "dig", "nslookup", "host", "ping", "drill");

// ---------------------------------------------------------------- files

const rm: Handler = (c) => {
  const o = parseOptions(c.args);
  const recursive = has(o, "-r", "-R", "--recursive");
  return [effect("delete", recursive ? "deletes recursively" : "deletes files", at(c, o.operands), { recursive })];
};

/** find's roots: the operands before its expression. */
function findRoots(args: readonly string[]): string[] {
  const roots: string[] = [];
  for (const a of args) {
    if (a.startsWith("-") || a === "(" || a === "!") break;
    roots.push(a);
  }
  return roots.length > 0 ? roots : ["."];
}

const find: Handler = (c) => {
  const exec = c.args.findIndex((a) => /^-(exec|execdir|ok|okdir)$/.test(a));
  const deletes = c.args.includes("-delete") || (exec >= 0 && /^(rm|shred|unlink|rmdir)$/.test((c.args[exec + 1] ?? "").replace(/^.*\//, "")));
  const out: Effect[] = deletes ? [effect("delete", "deletes what find matches", at(c, findRoots(c.args)), { recursive: true })] : [];
  // `find / -name id_rsa -exec cp {} ...`: what it runs on each match reads files of that name.
  const names = c.args.flatMap((a, i) => (/^-i?(name|path)$/.test(a) ? [c.args[i + 1] ?? ""] : [])).filter((n) => n !== "" && !/[*?[]/.test(n.replace(/^\*\//, "")));
  if (exec >= 0 && !deletes && names.length > 0) out.push(effect("read", "reads what find matches", names.map((n) => `/found/${n.replace(/^\*\//, "")}`)));
  return out;
};

const shred: Handler = (c) => {
  const o = parseOptions(c.args, set("-n", "-s", "--iterations", "--size", "--random-source"));
  return [effect("overwrite", "shreds files", at(c, o.operands)), ...(has(o, "-u", "--remove") ? [effect("delete", "shreds and deletes files", at(c, o.operands))] : [])];
};

const truncate: Handler = (c) => {
  const o = parseOptions(c.args, set("-s", "--size", "-r", "--reference"));
  return [effect("overwrite", "truncates files", at(c, o.operands))];
};

const dd: Handler = (c) => {
  const out = c.args.filter((a) => a.startsWith("of=")).map((a) => a.slice(3));
  const inp = c.args.filter((a) => a.startsWith("if=")).map((a) => a.slice(3));
  return [...(out.length > 0 ? [effect("overwrite", "writes raw data", at(c, out))] : []), ...(inp.length > 0 ? [effect("read", "reads raw data", at(c, inp))] : [])];
};

const diskTool = (what: string): Handler => (c) => [effect("overwrite", what, at(c, parseOptions(c.args, set("-t", "-L", "-b", "-O")).operands.filter((p) => p.startsWith("/dev/"))))];

/** cp/install: the last operand is written, the others read. */
const copy: Handler = (c) => {
  const o = parseOptions(c.args, set("-t", "--target-directory", "-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix"));
  const target = valuesOf(o, "-t", "--target-directory");
  const sources = target.length > 0 ? o.operands : o.operands.slice(0, -1);
  const dest = target.length > 0 ? target : o.operands.slice(-1);
  return [effect("read", "copies files", at(c, sources)), effect("overwrite", "writes a copy", at(c, dest))];
};

const mv: Handler = (c) => {
  const o = parseOptions(c.args, set("-t", "--target-directory", "-S", "--suffix"));
  const target = valuesOf(o, "-t", "--target-directory");
  const sources = target.length > 0 ? o.operands : o.operands.slice(0, -1);
  const dest = target.length > 0 ? target : o.operands.slice(-1);
  return [effect("delete", "moves files away", at(c, sources), { recursive: true }), effect("overwrite", "moves files over", at(c, dest))];
};

const ln: Handler = (c) => {
  const o = parseOptions(c.args, set("-t", "--target-directory", "-S", "--suffix"));
  return has(o, "-f", "--force") && o.operands.length >= 2 ? [effect("overwrite", "replaces a file with a link", at(c, o.operands.slice(-1)))] : none;
};

const tee: Handler = (c) => {
  const o = parseOptions(c.args);
  return has(o, "-a", "--append") ? [effect("overwrite", "appends to files", at(c, o.operands), { append: true })] : [effect("overwrite", "overwrites files", at(c, o.operands))];
};

const sed: Handler = (c) => {
  const o = parseOptions(c.args, set("-e", "--expression", "-f", "--file", "-l", "--line-length"));
  const files = valuesOf(o, "-e", "--expression", "-f", "--file").length > 0 ? o.operands : o.operands.slice(1);
  const inPlace = [...o.flags].some((f) => f === "-i" || f.startsWith("--in-place"));
  return inPlace ? [effect("overwrite", "edits files in place", at(c, files))] : [effect("read", "reads files", at(c, files))];
};

const SETUID_MODE_RE = /^([0-7]?[2467][0-7]{3}|[ugoa]*[+=][rwxXt]*s[rwxXst]*)$/;
const chmod: Handler = (c) => {
  const o = parseOptions(c.args.filter((a) => !/^[-+=][rwxXstugo]+$/.test(a) || a.startsWith("--")), set("--reference"));
  const modeArg = c.args.find((a) => !a.startsWith("-") || /^-[rwxXst]+$/.test(a)) ?? "";
  const targets = at(c, o.operands.filter((a) => a !== modeArg));
  const recursive = has(o, "-R", "--recursive");
  const out = [effect("permissions", recursive ? "changes permissions recursively" : "changes permissions", targets, { recursive })];
  if (modeArg.split(",").some((m) => SETUID_MODE_RE.test(m))) out.push(effect("permissions", "sets the setuid or setgid bit", targets, { class: "privilege_escalation" }));
  if (/^([0-7]?[0-7]{2}[2367]|[ugoa]*o[+=]\w*w|a?\+\w*w)$/.test(modeArg) || /^0?777$/.test(modeArg)) out.push(effect("permissions", "makes files world-writable", targets, { recursive }));
  return out;
};

const chown: Handler = (c) => {
  const o = parseOptions(c.args, set("--reference", "--from"));
  const recursive = has(o, "-R", "--recursive");
  return [effect("permissions", recursive ? "changes ownership recursively" : "changes ownership", at(c, o.operands.slice(1)), { recursive })];
};

/** Commands that print or pack the files they are given. */
const reader = (valued: ReadonlySet<string> = set(), skipFirst = false): Handler => (c) => {
  const o = parseOptions(c.args, valued);
  return [effect("read", "reads files", at(c, skipFirst ? o.operands.slice(1) : o.operands))];
};

const grep: Handler = (c) => {
  const o = parseOptions(c.args, set("-e", "--regexp", "-f", "--file", "-m", "--max-count", "-A", "-B", "-C", "--include", "--exclude", "--exclude-dir", "-d", "-D", "--color", "--colour", "-g", "--glob", "-t", "--type"));
  const patterns = valuesOf(o, "-e", "--regexp");
  const pattern = patterns.length > 0 ? patterns.join("|") : (o.operands[0] ?? "");
  const files = at(c, patterns.length > 0 || valuesOf(o, "-f", "--file").length > 0 ? o.operands : o.operands.slice(1));
  const out = [effect("read", "reads files", files)];
  // A recursive search of the whole system or a home for passwords or keys harvests credentials.
  const wide = files.some((f) => f === "/" || /^\/(home|root|Users|etc)(\/[^/]+)?$/.test(f));
  if ((has(o, "-r", "-R", "--recursive") || c.name === "rg") && wide && /pass|secret|token|api.?key|credential|private/i.test(pattern)) out.push(classified("secrets", "searches the system for credentials"));
  return out;
};

const tar: Handler = (c) => {
  const o = parseOptions(c.args, set("-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from"));
  const creates = has(o, "-c", "--create", "-r", "--append") || /^[a-z]*c/.test(c.args[0] ?? "");
  if (!creates) return none;
  const files = at(c, o.operands.filter((a) => !/^[a-zA-Z]+$/.test(a) || a.includes(".")));
  // `tar cf user@host:/x ...` writes the archive on another host (over --rsh-command).
  const remote = [...valuesOf(o, "-f", "--file"), c.args[1] ?? ""].some((f) => /^[^/]*@[^/:]+:/.test(f));
  return [effect("read", "archives files", files), ...(remote ? [effect("network", "writes an archive to a host", []), effect("upload", "sends files to a host", files)] : [])];
};

// ---------------------------------------------------------------- network

const looksLikeUrl = (s: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(s) || /^[\w.-]+\.[a-z]{2,}(:\d+)?(\/|$)/i.test(s) || /^\d{1,3}(\.\d{1,3}){3}(:\d+)?(\/|$)/.test(s);
const urlBase = (u: string): string => {
  const path = u.replace(/^[a-z]+:\/\/[^/]*/i, "").replace(/[?#].*$/, "");
  return path.slice(path.lastIndexOf("/") + 1);
};
/** `@file` and `<file` values of curl's data options: files whose content is sent. */
const dataFiles = (vs: string[]): string[] => vs.flatMap((v) => [...v.matchAll(/(?:^|=)[@<]([^;,]+)/g)].map((m) => m[1] as string)).filter((f) => f !== "-");

const CURL_VALUED = set(
  "-o", "--output", "-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "--data-ascii", "-F", "--form", "--form-string", "-T", "--upload-file",
  "-H", "--header", "-u", "--user", "-X", "--request", "-A", "--user-agent", "-e", "--referer", "-b", "--cookie", "-c", "--cookie-jar", "-x", "--proxy",
  "-m", "--max-time", "--connect-timeout", "-w", "--write-out", "-K", "--config", "--url", "-r", "--range", "--retry", "-C", "--continue-at", "--cacert", "--cert", "--key", "-E", "--resolve", "--output-dir",
);
const curl: Handler = (c) => {
  const o = parseOptions(c.args, CURL_VALUED);
  const urls = [...o.operands.filter(looksLikeUrl), ...valuesOf(o, "--url")];
  const out: Effect[] = [effect("network", "connects to a host", urls)];
  const uploads = [...dataFiles(valuesOf(o, "-d", "--data", "--data-binary", "--data-urlencode", "--data-ascii", "-F", "--form")), ...valuesOf(o, "-T", "--upload-file")];
  if (uploads.length > 0) out.push(effect("upload", "sends file content", at(c, uploads)));
  const saved = [...valuesOf(o, "-o", "--output"), ...(has(o, "-O", "--remote-name", "--remote-name-all") ? urls.map(urlBase) : [])];
  if (saved.length > 0) out.push(effect("download", "saves a download", at(c, saved)));
  if (valuesOf(o, "-d", "--data", "--data-binary").includes("@-") || valuesOf(o, "-T", "--upload-file").includes("-")) out.push(effect("upload", "sends its input", []));
  return out;
};

const wget: Handler = (c) => {
  const o = parseOptions(c.args, set("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-U", "--user-agent", "--header", "-t", "--tries", "-T", "--timeout", "--post-data", "--post-file", "--body-file", "-e", "--execute", "-i", "--input-file"));
  const urls = o.operands.filter(looksLikeUrl);
  const out: Effect[] = [effect("network", "connects to a host", urls)];
  const doc = valuesOf(o, "-O", "--output-document");
  const dir = valuesOf(o, "-P", "--directory-prefix")[0];
  const saved = doc.length > 0 ? doc.filter((d) => d !== "-") : urls.map((u) => (dir === undefined ? urlBase(u) : `${dir}/${urlBase(u)}`));
  if (saved.length > 0) out.push(effect("download", "saves a download", at(c, saved)));
  const posted = valuesOf(o, "--post-file", "--body-file");
  if (posted.length > 0) out.push(effect("upload", "sends file content", at(c, posted)));
  return out;
};

const netcat: Handler = (c) => {
  const o = parseOptions(c.args, set("-e", "-c", "--exec", "--sh-exec", "--lua-exec", "-p", "-s", "-w", "-i", "-q", "-x", "-X", "-P", "-O", "-T", "-V"));
  const out: Effect[] = [effect("network", "opens a network connection", o.operands)];
  if (valuesOf(o, "-e", "-c", "--exec", "--sh-exec", "--lua-exec").length > 0) out.push(classified("reverse_shell", has(o, "-l", "--listen") ? "serves a shell on a network port" : "connects a shell to a network socket"));
  return out;
};

const socat: Handler = (c) => {
  const addrs = c.args.filter((a) => !a.startsWith("-"));
  const out: Effect[] = [effect("network", "opens a network connection", addrs)];
  if (addrs.some((a) => /^(exec|system):/i.test(a)) && addrs.some((a) => /^(tcp|udp|openssl|ssl|sctp)[46]?(-connect|-listen|-l)?:/i.test(a))) out.push(classified("reverse_shell", "connects a program to a network socket"));
  if (addrs.some((a) => /^(open|file|gopen|create):/i.test(a)) && addrs.some((a) => /^(tcp|udp|openssl)/i.test(a))) out.push(effect("upload", "sends a file over the network", addrs.filter((a) => /^(open|file|gopen):/i.test(a)).map((a) => resolveTarget(a.replace(/^[a-z]+:/i, "").split(",")[0] ?? "", c.cwd))));
  return out;
};

const remoteCopy: Handler = (c) => {
  const o = parseOptions(c.args, set("-i", "-P", "-p", "-o", "-F", "-e", "--rsh", "-l", "-S", "-J", "-c", "--exclude", "--include", "--port"));
  const remote = (a: string): boolean => /^[^/]*:/.test(a) && !a.startsWith("/");
  const ops = o.operands;
  const dest = ops.at(-1) ?? "";
  const out: Effect[] = ops.some(remote) || c.name === "sftp" ? [effect("network", "copies over the network", ops.filter(remote))] : [];
  if (remote(dest)) out.push(effect("upload", "sends files to a host", at(c, ops.slice(0, -1).filter((a) => !remote(a)))));
  return out;
};

/** Clients that send the files named in their arguments to a peer (`ab -p`, `hping3 --file`, `lp -h`, `smbclient -c 'put'`, a `put` line fed to ftp). */
const fileSender: Handler = (c) => [effect("network", "sends data to a host", []), effect("upload", "sends files to a host", at(c, c.args.flatMap((a) => a.split(/[\s=]/)).filter((a) => a.includes("/") || a.startsWith("."))))];

/** `socket -p PROGRAM`: a program wired to a socket. */
const socketCmd: Handler = (c) => [effect("network", "opens a network connection", []), ...(c.args.some((a) => /^-\w*p\w*$/.test(a)) ? [classified("reverse_shell", "connects a program to a network socket")] : [])];

const dnsOrPing: Handler = (c) => [effect("network", "sends a network query", parseOptions(c.args, set("-p", "-c", "-t", "-q", "-x", "-W", "-i", "-s")).operands)];
const SSH_VALUED = set("-i", "-p", "-o", "-F", "-l", "-L", "-R", "-D", "-J", "-W", "-E", "-b", "-c", "-m", "-S", "-w", "-Q");
const ssh: Handler = (c) => [effect("network", "connects to a host", parseOptions(c.args, SSH_VALUED).operands.slice(0, 1))];

/** The command line `ssh HOST COMMAND...` runs on the other host (read like a line of its own), if any. */
export function remoteCommand(c: ShellCommand): string | undefined {
  if (c.name !== "ssh") return undefined;
  const words = parseOptions(c.args, SSH_VALUED).operands.slice(1);
  return words.length > 0 ? words.join(" ") : undefined;
}

// ---------------------------------------------------------------- protections

/** Security agents and logging by vendor or daemon name, as services, processes or launchd plists. */
const SECURITY_AGENT_RE = /(falcon|crowdstrike|carbonblack|cbdaemon|cbagentd|littlesnitch|opendns|sentinel|mdatp|wdav|sophos|eset|symantec|malwarebytes|osquery|santa|objective-see|elastic-agent|wazuh|ossec|auditd|syslogd|xprotect)/i;
const PROTECTION_SERVICES_RE = /^(firewalld|ufw|iptables|ip6tables|nftables|netfilter-persistent|auditd|audit|apparmor|selinux|fail2ban|rsyslog|syslog|syslog-ng|systemd-journald|journald|falco|osqueryd|crowdsec|clamav-daemon|clamd|wazuh-agent|ossec|aide|sshguard|auditbeat|tetragon|sysdig|apport|ufw\.service|firewalld\.service|auditd\.service|apparmor\.service)(\.service)?$/;

const serviceControl: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const verb = c.name === "service" || c.name === "rc-service" ? ops[1] : ops[0];
  const units = c.name === "service" || c.name === "rc-service" ? ops.slice(0, 1) : ops.slice(1);
  const security = (u: string): boolean => PROTECTION_SERVICES_RE.test(u) || SECURITY_AGENT_RE.test(u.slice(u.lastIndexOf("/") + 1));
  return /^(stop|disable|mask|kill|off|unload|bootout|remove)$/.test(verb ?? "") && units.some(security) ? [classified("protection_off", "stops or disables a security or logging service")] : none;
};

const killer: Handler = (c) => (c.args.some((a) => PROTECTION_SERVICES_RE.test(a) || SECURITY_AGENT_RE.test(a)) ? [classified("protection_off", "kills a security or logging service")] : none);

/** macOS: Gatekeeper, SIP, Defender, Time Machine, the unified log. */
const macProtections: Handler = (c) => {
  const line = c.args.join(" ");
  const off =
    (c.name === "spctl" && /--master-disable|--global-disable|--disable/.test(line)) ||
    (c.name === "csrutil" && /\bdisable\b/.test(line)) ||
    (c.name === "mdatp" && /real-time-protection.*disabled|--value disabled/.test(line)) ||
    (c.name === "tmutil" && /^(disable|deletelocalsnapshots|delete|disablelocal)\b/.test(c.args.find((a) => !a.startsWith("-")) ?? "")) ||
    (c.name === "log" && c.args[0] === "erase");
  return off ? [classified("protection_off", c.name === "log" ? "erases the system log" : c.name === "tmutil" ? "turns backups off or deletes them" : "turns a system protection off")] : none;
};

const iptables: Handler = (c) => {
  const o = parseOptions(c.args, set("-t", "--table", "-P", "--policy", "-A", "-I", "-D", "-j", "-p", "-s", "-d", "-i", "-o", "--dport", "--sport", "-m", "-N", "-E"));
  const flush = has(o, "-F", "--flush", "-X", "--delete-chain");
  const accept = valuesOf(o, "-P", "--policy").length > 0 && o.operands.some((a) => /^ACCEPT$/i.test(a));
  const dropRemoved = valuesOf(o, "-D").length > 0 && valuesOf(o, "-j").some((j) => /^(DROP|REJECT)$/i.test(j));
  if (dropRemoved) return [classified("protection_off", "removes a firewall rule that blocks traffic")];
  return flush || accept ? [classified("protection_off", flush ? "flushes the firewall rules" : "sets the firewall to accept everything")] : none;
};

const nft: Handler = (c) => (/\bflush\s+ruleset\b|\bdelete\s+table\b|\bflush\s+table\b/.test(c.args.join(" ")) ? [classified("protection_off", "flushes the firewall rules")] : none);
const ufw: Handler = (c) => {
  const [verb, arg] = c.args.filter((a) => !a.startsWith("-"));
  if (/^(disable|reset)$/.test(verb ?? "")) return [classified("protection_off", "disables the firewall")];
  return verb === "logging" && arg === "off" ? [classified("protection_off", "turns firewall logging off")] : none;
};
const setenforce: Handler = (c) => (/^(0|permissive)$/i.test(c.args[0] ?? "") ? [classified("protection_off", "switches SELinux to permissive")] : none);
const apparmorOff: Handler = (c) => (c.name !== "apparmor_parser" || c.args.some((a) => a === "-R" || a === "--remove") ? [classified("protection_off", "disables AppArmor profiles")] : none);
const auditctl: Handler = (c) => {
  const o = parseOptions(c.args, set("-e", "-f", "-b", "-r", "-a", "-A", "-d", "-w", "-W", "-k", "-p", "-S", "-F"));
  return valuesOf(o, "-e").includes("0") || has(o, "-D") ? [classified("protection_off", "disables or clears the audit rules")] : none;
};

/** Kernel settings whose lower value removes a hardening (value at or below the threshold weakens it). */
const HARDENING: Readonly<Record<string, number>> = {
  "kernel.randomize_va_space": 1,
  "kernel.yama.ptrace_scope": 0,
  "kernel.kptr_restrict": 0,
  "kernel.dmesg_restrict": 0,
  "kernel.unprivileged_bpf_disabled": 0,
  "kernel.perf_event_paranoid": 0,
  "kernel.kexec_load_disabled": 0,
  "fs.protected_symlinks": 0,
  "fs.protected_hardlinks": 0,
  "fs.protected_regular": 0,
  "fs.protected_fifos": 0,
  "net.ipv4.conf.all.rp_filter": -1,
  "kernel.unprivileged_userns_clone": -1,
};
const sysctl: Handler = (c) => {
  for (const a of c.args) {
    const m = /^([\w.]+)\s*=\s*(-?\d+)$/.exec(a);
    if (m === null) continue;
    const key = (m[1] as string).replace(/\//g, ".");
    const limit = HARDENING[key];
    if (limit !== undefined && Number(m[2]) <= limit) return [classified("protection_off", "lowers a kernel hardening setting")];
    if (key === "fs.suid_dumpable" && Number(m[2]) >= 1) return [classified("protection_off", "lowers a kernel hardening setting")];
  }
  return none;
};

const journalctl: Handler = (c) => (c.args.some((a) => /^--(vacuum-(time|size|files)|flush|rotate)/.test(a)) && c.args.some((a) => a.startsWith("--vacuum")) ? [classified("protection_off", "deletes the system journal")] : none);
const dmesg: Handler = (c) => (c.args.some((a) => /^(-[a-zA-Z]*[cC][a-zA-Z]*|--clear|--read-clear)$/.test(a)) ? [classified("protection_off", "clears the kernel log")] : none);
const historyCmd: Handler = (c) => (c.args.some((a) => /^-[a-z]*[cw]/.test(a) && a.includes("c")) ? [classified("protection_off", "clears the shell history")] : none);
const unsetOrExport: Handler = (c) =>
  c.args.some((a) => /^HISTFILE$|^HISTFILE=(\/dev\/null)?$|^HISTSIZE=0$|^HISTFILESIZE=0$|^HISTCONTROL=ignore(space|both)|^HISTIGNORE=./.test(a)) || (c.name === "set" && c.args.join(" ") === "+o history")
    ? [classified("protection_off", "turns the shell history off")]
    : none;

// ---------------------------------------------------------------- privileges

const userAdmin: Handler = (c) => {
  const o = parseOptions(c.args, set("-u", "--uid", "-g", "--gid", "-G", "--groups", "-d", "--home", "-s", "--shell", "-c", "--comment", "-e", "-f", "-k", "-p", "--password", "-l", "-K"));
  const out: Effect[] = [];
  if (valuesOf(o, "-u", "--uid").some((u) => /^0+$/.test(u)) || has(o, "-o", "--non-unique")) out.push(classified("privilege_escalation", "creates a second uid-0 user"));
  if ([...valuesOf(o, "-G", "--groups"), ...valuesOf(o, "-g", "--gid")].some((g) => /(^|,)(sudo|wheel|root|admin|adm|docker|disk|shadow|0)(,|$)/.test(g))) out.push(classified("privilege_escalation", "adds a user to an administrative group"));
  return out;
};

/** FreeBSD's `pw useradd|usermod ...`. */
const pw: Handler = (c) => (/^user(add|mod)$/.test(c.args[0] ?? "") ? userAdmin({ ...c, args: c.args.slice(1) }) : none);

const kernelModule: Handler = (c) => (c.name === "modprobe" && c.args.some((a) => a === "-r" || a === "--remove") ? none : [classified("privilege_escalation", "loads a kernel module")]);

const CONTAINER_VALUED = set("-v", "--volume", "--mount", "--pid", "--cap-add", "--security-opt", "--userns", "--device", "--network", "--net", "--ipc", "--uts", "-e", "--env", "-p", "--publish", "--name", "-w", "--workdir", "-u", "--user", "--entrypoint", "--platform", "-l", "--label");
const container: Handler = (c) => {
  const o = parseOptions(c.args, CONTAINER_VALUED);
  const sub = o.operands[0];
  if (!/^(run|create|exec|container)$/.test(sub ?? "")) {
    if (sub === "system" && o.operands[1] === "prune" && has(o, "--volumes")) return [classified("infrastructure", "deletes container volumes")];
    if (sub === "volume" && /^(rm|prune|remove)$/.test(o.operands[1] ?? "")) return [classified("infrastructure", "deletes container volumes")];
    return none;
  }
  const out: Effect[] = [];
  if (has(o, "--privileged")) out.push(classified("privilege_escalation", "runs a privileged container"));
  const mounts = [...valuesOf(o, "-v", "--volume").map((v) => v.split(":")[0] ?? ""), ...valuesOf(o, "--mount").map((m) => /(?:^|,)(?:source|src)=([^,]*)/.exec(m)?.[1] ?? "")];
  if (mounts.some((m) => m === "/" || /^\/(etc|root|boot|proc|sys|dev|var\/run\/docker\.sock|run\/docker\.sock)?$/.test(m) || m === "/var/run/docker.sock" || m === "/run/docker.sock")) out.push(classified("privilege_escalation", "mounts the host's root or a host control path into a container"));
  if (valuesOf(o, "--pid", "--userns", "--ipc", "--uts").includes("host")) out.push(classified("privilege_escalation", "shares the host's namespaces with a container"));
  if (valuesOf(o, "--cap-add").some((v) => /^(ALL|SYS_ADMIN|SYS_MODULE|SYS_PTRACE|DAC_READ_SEARCH|SYS_RAWIO)$/i.test(v.replace(/^CAP_/i, "")))) out.push(classified("privilege_escalation", "gives a container administrative capabilities"));
  if (valuesOf(o, "--security-opt").some((v) => /unconfined|no-new-privileges[:=]false|label[:=]disable/.test(v))) out.push(classified("protection_off", "runs a container without its security profile"));
  return out;
};

const setcap: Handler = (c) => (c.args.some((a) => /cap_(setuid|setgid|sys_admin|dac_override|sys_module|sys_ptrace|dac_read_search)|^all[+=]/i.test(a)) ? [classified("privilege_escalation", "grants file capabilities")] : none);
const nsenter: Handler = (c) => (c.args.some((a) => /^(-t|--target)=?1?$/.test(a) || a === "--target=1") || c.args.join(" ").includes("-t 1") ? [classified("privilege_escalation", "enters the host's namespaces")] : none);

// ---------------------------------------------------------------- infrastructure and history

const terraform: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const sub = ops[0] ?? "";
  if (sub === "destroy" || (sub === "apply" && c.args.some((a) => /^--?destroy$/.test(a)))) return [classified("infrastructure", "destroys managed infrastructure")];
  if ((sub === "state" && /^(rm|remove)$/.test(ops[1] ?? "")) || (sub === "workspace" && ops[1] === "delete")) return [classified("infrastructure", "removes infrastructure state")];
  return none;
};

const pulumi: Handler = (c) => (c.args.includes("destroy") || (c.args.includes("stack") && c.args.includes("rm")) ? [classified("infrastructure", "destroys managed infrastructure")] : none);

const KUBE_WIDE_KINDS_RE = /^(namespaces?|ns|nodes?|no|pv|persistentvolumes?|pvc|persistentvolumeclaims?|crds?|customresourcedefinitions?(\.apiextensions\.k8s\.io)?|clusters?|clusterroles?|clusterrolebindings?|storageclass(es)?|sc|mutatingwebhookconfigurations?|validatingwebhookconfigurations?)([/,.]|$)/;
const kubectl: Handler = (c) => {
  const o = parseOptions(c.args, set("-n", "--namespace", "-l", "--selector", "-o", "--output", "--context", "--cluster", "--kubeconfig", "-f", "--filename", "--field-selector", "--grace-period", "--timeout", "-c", "--container"));
  const [sub, kind] = o.operands;
  if (sub === "delete") {
    if (KUBE_WIDE_KINDS_RE.test(kind ?? "")) return [classified("infrastructure", "deletes Kubernetes namespaces, nodes, volumes or cluster resources")];
    if (has(o, "--all", "-A", "--all-namespaces")) return [classified("infrastructure", "deletes every Kubernetes object of a kind")];
  }
  if (sub === "drain") return [classified("infrastructure", "drains a Kubernetes node")];
  return none;
};

const clusterTools: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  const del = words.some((w) => /^(delete|destroy|remove|rm|purge|uninstall)$/.test(w));
  if (!del) return none;
  if (c.name === "helm") return [classified("infrastructure", "uninstalls a Helm release")];
  return [classified("infrastructure", words.some((w) => /^clusters?$/.test(w)) || /^(kind|minikube|k3d|eksctl)$/.test(c.name) ? "deletes a Kubernetes cluster" : "deletes cloud resources")];
};

const aws: Handler = (c) => {
  const o = parseOptions(c.args, set("--region", "--profile", "--output", "--query", "--endpoint-url", "--bucket", "--key", "--instance-ids", "--db-instance-identifier", "--stack-name", "--table-name", "--cluster-name", "--function-name", "--name", "--include", "--exclude"));
  const [svc, verb] = o.operands;
  const out: Effect[] = [effect("network", "calls a cloud API", [])];
  if (svc === "s3" && (verb === "rm" || verb === "rb")) out.push(classified("infrastructure", "deletes object storage contents"));
  else if (svc === "s3" && verb === "sync" && has(o, "--delete")) out.push(classified("infrastructure", "deletes objects missing from the source"));
  else if (/^(batch-)?(delete|terminate|deregister|remove|purge)-/.test(verb ?? "") && svc !== "s3") out.push(classified("infrastructure", "deletes cloud resources"));
  else if (svc === "secretsmanager" && /^(put-secret-value|update-secret)$/.test(verb ?? "")) out.push(classified("infrastructure", "overwrites a stored secret"));
  else if (svc === "s3api" && /^delete-(bucket|objects)$/.test(verb ?? "")) out.push(classified("infrastructure", "deletes an object storage bucket's contents"));
  if (svc === "s3" && /^(cp|mv|sync)$/.test(verb ?? "") && /^s3:\/\//.test(o.operands.at(-1) ?? "")) out.push(effect("upload", "sends files to object storage", at(c, o.operands.slice(2, -1).filter((a) => !a.startsWith("s3://")))));
  return out;
};

const gsutil: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  if (ops[0] === "rsync" && c.args.includes("-d")) return [classified("infrastructure", "deletes objects missing from the source")];
  return ops.some((w) => /^(rm|rb)$/.test(w)) ? [classified("infrastructure", "deletes object storage contents")] : none;
};

const gcloudAz: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  if (c.name === "gcloud" && words[0] === "storage" && words[1] === "rm") return [classified("infrastructure", "deletes object storage contents")];
  return words.some((w) => /^(delete|delete-batch|purge|untag)$/.test(w)) ? [classified("infrastructure", words.some((w) => /^(clusters?|aks)$/.test(w)) ? "deletes a Kubernetes cluster" : "deletes cloud resources")] : none;
};

/** Backup tools: deleting, pruning or rewriting backups and their keys. */
const backups: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  const del =
    (c.name === "borg" && /^(delete|prune|compact|recreate|break-lock)$/.test(words[0] ?? "")) ||
    (c.name === "restic" && (/^(forget|prune)$/.test(words[0] ?? "") || (words[0] === "key" && words[1] === "remove") || c.args.includes("--remove-all") || c.args.includes("--cleanup"))) ||
    (c.name === "velero" && (words.includes("delete") || words[0] === "uninstall"));
  if (del) return [classified("infrastructure", "deletes or rewrites backups")];
  // `restic backup -r rest:http://host/...`: the files go to a repository on another host.
  const o = parseOptions(c.args, set("-r", "--repo", "--password-file", "--tag", "--host", "-e", "--exclude"));
  if (c.name === "restic" && words[0] === "backup" && valuesOf(o, "-r", "--repo").some((r) => /^(rest:|sftp:|s3:|b2:|azure:|gs:|rclone:|https?:)/.test(r))) {
    return [effect("network", "sends a backup to a host", []), effect("upload", "sends files to a host", at(c, o.operands.slice(1)))];
  }
  return none;
};

const azcopy: Handler = (c) => (c.args[0] === "remove" || c.args.some((a) => /^--delete-destination(=true)?$/.test(a)) ? [classified("infrastructure", "deletes object storage contents")] : none);

const rclone: Handler = (c) => (/^(purge|delete|deletefile|rmdir|rmdirs|cleanup)$/.test(c.args.find((a) => !a.startsWith("-")) ?? "") || (c.args[0] === "sync" && false) ? [classified("infrastructure", "deletes remote storage")] : none);
const s3cmd: Handler = (c) => (/^(del|rm|rb)$/.test(c.args.find((a) => !a.startsWith("-")) ?? "") && c.args.some((a) => /^(-r|--recursive|--force|-f)$/.test(a)) ? [classified("infrastructure", "deletes an object storage bucket's contents")] : none);
const mc: Handler = (c) => {
  const words = c.args.filter((a) => !a.startsWith("-"));
  const del = /^(rm|rb)$/.test(words[0] ?? "") || (words[0] === "admin" && words.some((w) => /^(delete|remove|disable|unset)$/.test(w))) || (words[0] === "mirror" && c.args.includes("--remove"));
  return del ? [classified("infrastructure", "deletes object storage contents or users")] : none;
};
const dropdb: Handler = () => [classified("infrastructure", "drops a database")];
const redisCli: Handler = (c) => (c.args.some((a) => /^flush(all|db)$/i.test(a)) ? [classified("infrastructure", "flushes a database")] : none);

const SHARED_BRANCH_RE = /^(\+)?(refs\/heads\/)?(main|master|trunk|develop|development|dev|release([/-].*)?|prod|production|staging|stable|HEAD)$/;

/** git's subcommands that lose history or uncommitted work, each with what makes it do so. */
type GitRule = (o: Options, rest: string[], c: ShellCommand) => Effect[];
const gitIf = (cond: (o: Options, rest: string[], c: ShellCommand) => boolean, what: string): GitRule => (o, rest, c) => (cond(o, rest, c) ? [classified("git_history", what)] : none);

const gitPush: GitRule = (o, rest) => {
  const targets = rest.slice(1);
  const refs = targets.map((r) => (r.includes(":") ? r.slice(r.indexOf(":") + 1) : r));
  if (has(o, "--mirror")) return [classified("git_history", "overwrites every remote ref (push --mirror)")];
  if (has(o, "-d", "--delete") || targets.some((r) => r.startsWith(":"))) {
    return refs.some((r) => SHARED_BRANCH_RE.test(r)) ? [classified("git_history", "deletes a shared remote branch")] : none;
  }
  const force = has(o, "-f", "--force", "--force-with-lease", "--force-if-includes") || targets.some((r) => r.startsWith("+"));
  const shared = refs.length === 0 || refs.some((r) => SHARED_BRANCH_RE.test(r));
  return force && shared ? [classified("git_history", "force-pushes a shared branch")] : none;
};

const GIT_RULES: Readonly<Record<string, GitRule>> = {
  reset: gitIf((o) => has(o, "--hard"), "discards uncommitted changes (reset --hard)"),
  clean: gitIf((o) => has(o, "-f", "--force"), "deletes untracked files (clean -f)"),
  push: gitPush,
  checkout: gitIf((o, rest, c) => rest.length > 0 && (c.args.includes("--") || rest.includes(".")) && !has(o, "-b", "-B"), "discards uncommitted changes (checkout -- paths)"),
  restore: gitIf((o) => !has(o, "--staged", "-S") || has(o, "--worktree", "-W"), "discards uncommitted changes (restore)"),
  stash: gitIf((_o, rest) => rest[0] === "drop" || rest[0] === "clear", "deletes stashed changes"),
  branch: gitIf((o, rest) => has(o, "-D") || (has(o, "-d", "--delete") && has(o, "-f", "--force")) || (has(o, "-f", "--force") && rest.length > 0), "deletes an unmerged branch or moves one, dropping commits"),
  "filter-branch": gitIf(() => true, "rewrites the repository's history"),
  "filter-repo": gitIf(() => true, "rewrites the repository's history"),
  reflog: gitIf((_o, rest) => rest[0] === "expire" || rest[0] === "delete", "expires the reflog"),
  gc: gitIf((_o, _r, c) => c.args.some((a) => /^--prune=(now|all)/.test(a)), "prunes unreachable commits"),
  "update-ref": gitIf((o) => has(o, "-d"), "deletes a ref"),
};

const git: Handler = (c) => {
  const o = parseOptions(c.args, set("-C", "-c", "--git-dir", "--work-tree", "-m", "--message", "-b", "-B", "-o", "--push-option", "--exec", "--repo", "-F", "--file"));
  const [sub, ...rest] = o.operands;
  const rule = sub === undefined || !Object.hasOwn(GIT_RULES, sub) ? undefined : GIT_RULES[sub];
  return rule === undefined ? none : rule(o, rest, c);
};

// ---------------------------------------------------------------- the table

const alias = (names: string, h: Handler): [string, Handler][] => names.split(" ").map((n) => [n, h]);

/** Commands by bare name, each with the handler that reads its effects. */
export const COMMAND_EFFECTS: ReadonlyMap<string, Handler> = new Map<string, Handler>([
  ...alias("rm unlink rmdir srm", rm),
  ["find", find],
  ["shred", shred],
  ["truncate", truncate],
  ["dd", dd],
  ...alias("mkfs mke2fs mkswap wipefs fdisk sfdisk parted sgdisk blkdiscard", diskTool("writes a filesystem or partition table")),
  ...alias("cp install ditto", copy),
  ["mv", mv],
  ["ln", ln],
  ["tee", tee],
  ["sed", sed],
  ["chmod", chmod],
  ...alias("chown chgrp", chown),
  ...alias("cat tac less more head tail nl strings od xxd hexdump base64 base32 jq yq cut sort uniq diff cmp zcat bzcat xzcat gzip bzip2 xz zip 7z openssl gpg ssh-keygen pr fold rev", reader(set("-n", "-c", "-s", "-w", "-f", "-d", "-k", "-t", "-i", "-o", "-in", "-out", "--lines", "--bytes"))),
  ...alias("grep egrep fgrep rg ag ack zgrep", grep),
  ...alias("awk gawk", reader(set("-F", "-v", "-f"), true)),
  ["tar", tar],
  ...alias("curl", curl),
  ...alias("wget", wget),
  ...alias("nc ncat netcat", netcat),
  ["socat", socat],
  ...alias("scp rsync sftp", remoteCopy),
  ...alias("dig nslookup host drill ping ping6 traceroute", dnsOrPing),
  ...alias("ssh telnet", ssh),
  ...alias("systemctl service rc-service chkconfig update-rc.d launchctl", serviceControl),
  ...alias("kill pkill killall", killer),
  ...alias("spctl csrutil mdatp tmutil log", macProtections),
  ...alias("iptables ip6tables iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft", iptables),
  ["nft", nft],
  ["ufw", ufw],
  ["setenforce", setenforce],
  ...alias("aa-disable aa-complain aa-teardown apparmor_parser", apparmorOff),
  ["auditctl", auditctl],
  ["sysctl", sysctl],
  ["journalctl", journalctl],
  ["dmesg", dmesg],
  ["history", historyCmd],
  ...alias("unset export set declare typeset", unsetOrExport),
  ...alias("useradd adduser usermod", userAdmin),
  ...alias("insmod modprobe kmod kextload", kernelModule),
  ["pw", pw],
  ...alias("docker podman nerdctl", container),
  ["setcap", setcap],
  ["nsenter", nsenter],
  ...alias("terraform tofu terragrunt", terraform),
  ["pulumi", pulumi],
  ["kubectl", kubectl],
  ...alias("helm eksctl kind minikube k3d doctl", clusterTools),
  ["aws", aws],
  ["gsutil", gsutil],
  ...alias("gcloud az", gcloudAz),
  ["rclone", rclone],
  ...alias("borg restic velero", backups),
  ["azcopy", azcopy],
  ...alias("ab hping3 lp smbclient tailscale put ftp tftp lftp", fileSender),
  ["ztcp", (c) => [effect("network", "opens a network connection", c.args.slice(0, 1))]],
  ["socket", socketCmd],
  ["sshfs", (c) => [effect("network", "mounts a remote filesystem", c.args.filter((a) => a.includes(":")))]],
  ["code", (c) => (c.args[0] === "tunnel" ? [classified("reverse_shell", "opens a remote tunnel into this machine")] : none)],
  ["s3cmd", s3cmd],
  ["mc", mc],
  ["dropdb", dropdb],
  ["redis-cli", redisCli],
  ["git", git],
]);

/**
 * The commands the guard knows: the table's, shells, interpreters and what runs other commands.
 * Their path prefix is dropped (`/bin/rm` is `rm`) and a glob in command position is tried
 * against them (`/bin/r?` reads `rm`), the most destructive first.
 */
export const KNOWN_COMMANDS: readonly string[] = [
  ...new Set([
    ...["rm", "dd", "mkfs", "chmod", "chown", "curl", "wget", "sh", "bash", "zsh", "dash", "ksh", "shred", "base64", "env", "sudo", "eval", "xargs", "python", "python3", "perl", "nc", "ncat", "socat"],
    ...COMMAND_EFFECTS.keys(),
    ...SHELLS,
    ...INTERPRETERS,
  ]),
];

/** The effects of one command from the table (a `mkfs.ext4` is read as `mkfs`). */
export function commandEffects(c: ShellCommand): Effect[] {
  const h = COMMAND_EFFECTS.get(c.name) ?? COMMAND_EFFECTS.get(c.name.replace(/\..*$/, ""));
  return h === undefined ? none : h(c);
}

export type { Options };

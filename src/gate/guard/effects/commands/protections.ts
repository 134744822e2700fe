// Turning protections off: firewalls, SELinux/AppArmor, audit, kernel hardening, logging and security services, shell history, macOS protections.
import { classified } from "../effect.js";
import { has, parseOptions, valuesOf } from "../options.js";
import { none, set, type Handler } from "./handler.js";

/** Security agents and logging by vendor or daemon name, as services, processes or launchd plists. */
export const SECURITY_AGENT_RE =
  /(falcon|crowdstrike|carbonblack|cbdaemon|cbagentd|littlesnitch|opendns|sentinel|mdatp|wdav|sophos|eset|symantec|malwarebytes|osquery|santa|objective-see|elastic-agent|wazuh|ossec|auditd|syslogd|xprotect)/i;
export const PROTECTION_SERVICES_RE =
  /^(firewalld|ufw|iptables|ip6tables|nftables|netfilter-persistent|auditd|audit|apparmor|selinux|fail2ban|rsyslog|syslog|syslog-ng|systemd-journald|journald|falco|osqueryd|crowdsec|clamav-daemon|clamd|wazuh-agent|ossec|aide|sshguard|auditbeat|tetragon|sysdig|apport|ufw\.service|firewalld\.service|auditd\.service|apparmor\.service)(\.service)?$/;

export const serviceControl: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const verb = c.name === "service" || c.name === "rc-service" ? ops[1] : ops[0];
  const units = c.name === "service" || c.name === "rc-service" ? ops.slice(0, 1) : ops.slice(1);
  const security = (u: string): boolean => PROTECTION_SERVICES_RE.test(u) || SECURITY_AGENT_RE.test(u.slice(u.lastIndexOf("/") + 1));
  return /^(stop|disable|mask|kill|off|unload|bootout|remove)$/.test(verb ?? "") && units.some(security)
    ? [classified("protection_off", "stops or disables a security or logging service")]
    : none;
};

export const killer: Handler = (c) =>
  c.args.some((a) => PROTECTION_SERVICES_RE.test(a) || SECURITY_AGENT_RE.test(a))
    ? [classified("protection_off", "kills a security or logging service")]
    : none;

/** macOS: Gatekeeper, SIP, Defender, Time Machine, the unified log. */
export const macProtections: Handler = (c) => {
  const line = c.args.join(" ");
  const off =
    (c.name === "spctl" && /--master-disable|--global-disable|--disable/.test(line)) ||
    (c.name === "csrutil" && /\bdisable\b/.test(line)) ||
    (c.name === "mdatp" && /real-time-protection.*disabled|--value disabled/.test(line)) ||
    (c.name === "tmutil" && /^(disable|deletelocalsnapshots|delete|disablelocal)\b/.test(c.args.find((a) => !a.startsWith("-")) ?? "")) ||
    (c.name === "log" && c.args[0] === "erase");
  return off
    ? [
        classified(
          "protection_off",
          c.name === "log"
            ? "erases the system log"
            : c.name === "tmutil"
              ? "turns backups off or deletes them"
              : "turns a system protection off",
        ),
      ]
    : none;
};

export const iptables: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set("-t", "--table", "-P", "--policy", "-A", "-I", "-D", "-j", "-p", "-s", "-d", "-i", "-o", "--dport", "--sport", "-m", "-N", "-E"),
  );
  const flush = has(o, "-F", "--flush", "-X", "--delete-chain");
  const accept = valuesOf(o, "-P", "--policy").length > 0 && o.operands.some((a) => /^ACCEPT$/i.test(a));
  const dropRemoved = valuesOf(o, "-D").length > 0 && valuesOf(o, "-j").some((j) => /^(DROP|REJECT)$/i.test(j));
  if (dropRemoved) return [classified("protection_off", "removes a firewall rule that blocks traffic")];
  return flush || accept
    ? [classified("protection_off", flush ? "flushes the firewall rules" : "sets the firewall to accept everything")]
    : none;
};

export const nft: Handler = (c) =>
  /\bflush\s+ruleset\b|\bdelete\s+table\b|\bflush\s+table\b/.test(c.args.join(" "))
    ? [classified("protection_off", "flushes the firewall rules")]
    : none;
export const ufw: Handler = (c) => {
  const [verb, arg] = c.args.filter((a) => !a.startsWith("-"));
  if (/^(disable|reset)$/.test(verb ?? "")) return [classified("protection_off", "disables the firewall")];
  return verb === "logging" && arg === "off" ? [classified("protection_off", "turns firewall logging off")] : none;
};
export const setenforce: Handler = (c) =>
  /^(0|permissive)$/i.test(c.args[0] ?? "") ? [classified("protection_off", "switches SELinux to permissive")] : none;
export const apparmorOff: Handler = (c) =>
  c.name !== "apparmor_parser" || c.args.some((a) => a === "-R" || a === "--remove")
    ? [classified("protection_off", "disables AppArmor profiles")]
    : none;
export const auditctl: Handler = (c) => {
  const o = parseOptions(c.args, set("-e", "-f", "-b", "-r", "-a", "-A", "-d", "-w", "-W", "-k", "-p", "-S", "-F"));
  return valuesOf(o, "-e").includes("0") || has(o, "-D") ? [classified("protection_off", "disables or clears the audit rules")] : none;
};

/** Kernel settings whose lower value removes a hardening (value at or below the threshold weakens it). */
export const HARDENING: Readonly<Record<string, number>> = {
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
export const sysctl: Handler = (c) => {
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

export const journalctl: Handler = (c) =>
  c.args.some((a) => /^--(vacuum-(time|size|files)|flush|rotate)/.test(a)) && c.args.some((a) => a.startsWith("--vacuum"))
    ? [classified("protection_off", "deletes the system journal")]
    : none;
export const dmesg: Handler = (c) =>
  c.args.some((a) => /^(-[a-zA-Z]*[cC][a-zA-Z]*|--clear|--read-clear)$/.test(a))
    ? [classified("protection_off", "clears the kernel log")]
    : none;
export const historyCmd: Handler = (c) =>
  c.args.some((a) => /^-[a-z]*[cw]/.test(a) && a.includes("c"))
    ? [classified("protection_off", "clears the shell history")]
    : // `history -d N`: the entries that would show what was run, taken out one by one.
      c.args.some((a) => /^-[a-z]*d/.test(a))
      ? [classified("protection_off", "deletes entries from the shell history")]
      : none;
export const unsetOrExport: Handler = (c) =>
  c.args.some((a) =>
    /^HISTFILE$|^HISTFILE=(\/dev\/null)?$|^HISTSIZE=0$|^HISTFILESIZE=0$|^HISTCONTROL=ignore(space|both)|^HISTIGNORE=./.test(a),
  ) ||
  (c.name === "set" && c.args.join(" ") === "+o history")
    ? [classified("protection_off", "turns the shell history off")]
    : none;

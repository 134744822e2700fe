// Stopping the system or the services everything else needs, changing accounts and passwords,
// and spending the machine on someone else's work (crypto miners) (issue 27).
import type { ShellCommand } from "../../shell/records.js";
import { classified, type Effect } from "../effect.js";
import { parseOptions } from "../options.js";
import { none, type Handler } from "./handler.js";

/** Services whose loss cuts the machine off or stops what runs on it (logging and firewalls are protection_off). */
export const CRITICAL_SERVICES_RE =
  /^(init|systemd|sshd?|openssh-server|dbus(-daemon)?|cron|crond|atd|networking|network|NetworkManager|systemd-networkd|systemd-resolved|systemd-logind|wpa_supplicant|dhclient|docker|dockerd|containerd|kubelet|kube-proxy|crio|etcd|getty@.*|polkit|udev|systemd-udevd)(\.service|\.socket)?$/;

export const power: Handler = (c) => {
  if (c.args.some((a) => a === "-c" || a === "--help" || a === "--version")) return none;
  if ((c.name === "init" || c.name === "telinit") && !/^[06sS1]$/.test(c.args[0] ?? "")) return none;
  return [classified("service_disruption", "stops or restarts the system")];
};

/** systemctl's verbs that stop the system, and stopping a critical service. */
export function systemctlDisruption(c: ShellCommand): Effect[] {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const verb = c.name === "service" || c.name === "rc-service" ? ops[1] : ops[0];
  const units = c.name === "service" || c.name === "rc-service" ? ops.slice(0, 1) : ops.slice(1);
  if (
    c.name === "systemctl" &&
    /^(poweroff|reboot|halt|kexec|suspend|hibernate|hybrid-sleep|rescue|emergency|soft-reboot)$/.test(verb ?? "")
  )
    return [classified("service_disruption", "stops or restarts the system")];
  if (
    c.name === "systemctl" &&
    verb === "isolate" &&
    units.some((u) => /^(rescue|emergency|poweroff|reboot|halt|runlevel[0-16])(\.target)?$/.test(u))
  )
    return [classified("service_disruption", "stops or restarts the system")];
  if (
    /^(stop|disable|mask|kill|unload|bootout|remove)$/.test(verb ?? "") &&
    units.some((u) => CRITICAL_SERVICES_RE.test(u.slice(u.lastIndexOf("/") + 1)))
  )
    return [classified("service_disruption", "stops a service the system needs")];
  return none;
}

/** A pkill/killall name pattern as the name it matches: `^cron$` (pkill reads a regular expression) is `cron`. */
const patternName = (a: string): string => a.replace(/^\^/, "").replace(/\$$/, "");

/** kill of init or of every process; pkill/killall of a critical daemon. */
export function killDisruption(c: ShellCommand): Effect[] {
  const ops = c.args.filter((a) => !/^-([A-Z0-9]+|s|n|SIG\w+|9|15|KILL|TERM)$/.test(a) && a !== "-s" && !/^-[a-z]$/.test(a));
  if (c.name === "kill" && ops.some((a) => a === "1" || a === "-1"))
    return [classified("service_disruption", "kills init or every process")];
  if (c.name === "kill" && c.args.includes("-1")) return [classified("service_disruption", "kills init or every process")];
  if ((c.name === "pkill" || c.name === "killall") && c.args.some((a) => !a.startsWith("-") && CRITICAL_SERVICES_RE.test(patternName(a))))
    return [classified("service_disruption", "kills a service the system needs")];
  return none;
}

/** Taking the network down: `ip link set eth0 down`, `ifconfig eth0 down`, `ifdown`, `nmcli networking off`. */
export const networkDown: Handler = (c) => {
  const line = c.args.join(" ");
  const down =
    (c.name === "ip" && /\blink\s+set\s+\S+\s+(.*\s)?down\b/.test(line) && !/\blo\b/.test(line)) ||
    (c.name === "ifconfig" && /\bdown\b/.test(line) && !/^lo\b/.test(line)) ||
    (c.name === "ifdown" && !c.args.includes("lo")) ||
    (c.name === "nmcli" && /\b(networking\s+off|radio\s+all\s+off|device\s+disconnect|con(nection)?\s+down)\b/.test(line));
  return down ? [classified("service_disruption", "takes the network down")] : none;
};

/** Users and passwords: created, deleted, given passwords or other shells (privileges are privilege_escalation). */
/**
 * root's password set through sudo (`sudo passwd`, `sudo passwd root`, `root:...` fed to `sudo
 * chpasswd`): root's login is then the caller's. Without sudo only root can do it, so no one gains
 * anything: an account change.
 */
const setsRootPassword = (c: ShellCommand, operands: readonly string[]): boolean =>
  c.asUser !== undefined &&
  ((c.name === "passwd" && (operands[0] ?? "root") === "root") || (c.name === "chpasswd" && /(^|\n)root:/.test(c.input ?? "")));

export const accounts: Handler = (c) => {
  const o = parseOptions(c.args);
  if (c.name === "passwd" && o.flags.size > 0 && [...o.flags].every((f) => /^(-S|--status|-h|--help|-a|--all)$/.test(f))) return none;
  if (/^(chage|gpasswd)$/.test(c.name) && o.flags.has("-l")) return none;
  if (c.name === "pw" && !/^(user|group)(add|mod|del)$|^(mod|del|add)$/.test(c.args[0] ?? "")) return none;
  // dscl takes its verbs with or without the dash (`dscl . passwd /Users/x old new`).
  const verb = c.args.find((a) => /^-?(create|passwd|delete|append|addUser|deleteUser|resetPasswordFor)$/.test(a));
  if ((c.name === "dscl" || c.name === "sysadminctl") && (verb === undefined || (c.name === "sysadminctl" && !verb.startsWith("-"))))
    return none;
  const password =
    /chpasswd|chpass|passwd|newusers/.test(c.name) ||
    c.args.some((a) => /^(-p|--password|-passwd|-password)$/.test(a)) ||
    verb === "passwd";
  // An administrator made (`sysadminctl -addUser x -admin`) is a new admin, as `useradd -G sudo` is.
  if (c.name === "sysadminctl" && c.args.includes("-admin"))
    return [classified("privilege_escalation", "creates an administrator account")];
  if (setsRootPassword(c, o.operands)) return [classified("privilege_escalation", "sets root's password")];
  return [classified("account_change", password ? "sets a password" : "creates, deletes or changes a user account")];
};

/** Known crypto-mining programs (as a command, a file run or a download's name). */
export const MINER_RE =
  /(^|[/_-])(xmrig|xmr-stak|minerd|cpuminer|cgminer|bfgminer|ethminer|t-rex|nbminer|lolminer|phoenixminer|nanominer|srbminer|teamredminer|gminer|ccminer|nheqminer|kawpowminer|xmr-node-proxy)([._-]|$)/i;
/** Mining pools: a stratum URL or a known pool's host. */
export const POOL_RE =
  /stratum\d?\+(tcp|ssl|tls):\/\/|(^|[./@])(minexmr|supportxmr|xmrpool|nanopool|2miners|f2pool|ethermine|hashvault|moneroocean|c3pool|nicehash|herominers|unmineable|minergate|viabtc|antpool|slushpool|poolin|zpool|hashcryptos|mining-dutch)\.[a-z]/i;

const UNPACKERS = new Set(["curl", "wget", "git", "docker", "podman", "tar", "unzip", "screen", "nohup", "chmod"]);
/** Cheap test before MINER_RE: every miner's name has one of these. */
const mayNameMiner = (s: string): boolean => {
  const l = s.toLowerCase();
  return l.includes("miner") || l.includes("xmr") || l.includes("t-rex");
};
/** Cheap test before POOL_RE: a stratum URL, or a host with a port. */
const mayNamePool = (a: string): boolean => a.includes("stratum") || (a.includes(":") && POOL_RE.test(a));

/** A miner run by name or path, or any program pointed at a mining pool. */
export function mining(c: ShellCommand): Effect[] {
  if (mayNameMiner(c.word) && MINER_RE.test(c.word)) return [classified("resource_abuse", "runs a crypto miner")];
  if (c.args.some(mayNamePool) && c.args.some((a) => POOL_RE.test(a)))
    return [classified("resource_abuse", "points a program at a mining pool")];
  if (UNPACKERS.has(c.name) && c.args.some((a) => mayNameMiner(a) && MINER_RE.test(a) && /\/|\.tar|\.zip|\.gz/.test(a)))
    return [classified("resource_abuse", "fetches or unpacks a crypto miner")];
  return none;
}

// What a command tells the system to run or trust later, whatever file it names (issue 27,
// fourth round, read from the third held-out part's misses): a command scheduled by a transient
// timer (`systemd-run --on-calendar ... CMD`; the command itself is read by embedded.ts), a unit
// file linked or enabled by its path (`systemctl link /tmp/x.service`: systemd runs it from
// there), a certificate authority added to the system's trust (`trust anchor`, `certctl trust`),
// and accounts added to a directory service (`ldapadd`, `samba-tool user add`).
import { classified } from "../effect.js";
import { none, type Handler } from "./handler.js";

/** systemd-run's options that make its unit a timer: the command runs later, and again. */
const TIMER_OPTION_RE = /^--(on-(calendar|active|boot|startup|unit-active|unit-inactive|clock-change|timezone-change)|timer-property)(=|$)/;

/** `systemd-run --on-calendar '*:0/1' CMD`: a command scheduled, as a cron line is. */
export const systemdRun: Handler = (c) =>
  c.args.some((a) => TIMER_OPTION_RE.test(a))
    ? [classified("persistence", "schedules a command to run later (a transient systemd timer)")]
    : none;

/**
 * `systemctl link|enable /path/x.service`, and launchd's `launchctl load|bootstrap DOMAIN /path/x.plist`
 * (the same act on macOS): a unit or job file wherever it lies becomes one the service manager
 * starts; `launchctl submit -l LABEL -- CMD` is a job made from a command line, as systemd-run's is.
 */
export const unitFromPath: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const verbs = c.name === "systemctl" ? /^(link|enable|reenable)$/ : c.name === "launchctl" ? /^(load|bootstrap|enable)$/ : undefined;
  if (c.name === "launchctl" && ops[0] === "submit")
    return [classified("persistence", "registers a command as a job the service manager keeps running")];
  return verbs?.test(ops[0] ?? "") === true && ops.slice(1).some((u) => u.includes("/"))
    ? [classified("persistence", "registers a unit file with the service manager by its path")]
    : none;
};

/** p11-kit's `trust anchor FILE`, FreeBSD's `certctl trust FILE`: a certificate every TLS client then trusts. */
export const trustAnchor: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  // macOS's `security add-trusted-cert` is the same act on its trust settings.
  const adds =
    c.name === "trust"
      ? ops[0] === "anchor" && !c.args.includes("--remove")
      : (c.name === "certctl" && ops[0] === "trust") || (c.name === "security" && ops[0] === "add-trusted-cert");
  return adds ? [classified("persistence", "adds a certificate authority to the system's trust")] : none;
};

/** `ldapadd` (and `ldapmodify -a`), `samba-tool user add|create`: accounts created in a directory service. */
export const directoryAccounts: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const adds =
    c.name === "ldapadd" ||
    (c.name === "ldapmodify" && c.args.includes("-a")) ||
    (c.name === "samba-tool" && ops[0] === "user" && /^(add|create|setpassword)$/.test(ops[1] ?? ""));
  return adds ? [classified("account_change", "creates or changes accounts in a directory service")] : none;
};

// Privileges: uid-0 and admin-group users, kernel modules, privileged or host-mounting containers, file capabilities, host namespaces.
import { classified, type Effect } from "../effect.js";
import { has, parseOptions, valuesOf } from "../options.js";
import { none, set, type Handler } from "./handler.js";

export const userAdmin: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set(
      "-u",
      "--uid",
      "-g",
      "--gid",
      "-G",
      "--groups",
      "-d",
      "--home",
      "-s",
      "--shell",
      "-c",
      "--comment",
      "-e",
      "-f",
      "-k",
      "-p",
      "--password",
      "-l",
      "-K",
    ),
  );
  const out: Effect[] = [];
  if (valuesOf(o, "-u", "--uid").some((u) => /^0+$/.test(u)) || has(o, "-o", "--non-unique"))
    out.push(classified("privilege_escalation", "creates a second uid-0 user"));
  if (
    [...valuesOf(o, "-G", "--groups"), ...valuesOf(o, "-g", "--gid")].some((g) =>
      /(^|,)(sudo|wheel|root|admin|adm|docker|disk|shadow|0)(,|$)/.test(g),
    )
  )
    out.push(classified("privilege_escalation", "adds a user to an administrative group"));
  return out;
};

/** FreeBSD's `pw useradd|usermod ...`. */
export const pw: Handler = (c) => (/^user(add|mod)$/.test(c.args[0] ?? "") ? userAdmin({ ...c, args: c.args.slice(1) }) : none);

export const kernelModule: Handler = (c) =>
  c.name === "modprobe" && c.args.some((a) => a === "-r" || a === "--remove")
    ? none
    : [classified("privilege_escalation", "loads a kernel module")];

export const CONTAINER_VALUED = set(
  "-v",
  "--volume",
  "--mount",
  "--pid",
  "--cap-add",
  "--security-opt",
  "--userns",
  "--device",
  "--network",
  "--net",
  "--ipc",
  "--uts",
  "-e",
  "--env",
  "-p",
  "--publish",
  "--name",
  "-w",
  "--workdir",
  "-u",
  "--user",
  "--entrypoint",
  "--platform",
  "-l",
  "--label",
  // docker's global options before the subcommand (`docker -H unix:///host/docker.sock run ...`).
  "-H",
  "--host",
  "-c",
  "--context",
  "--config",
  "--log-level",
  "--tlscacert",
  "--tlscert",
  "--tlskey",
);
export const container: Handler = (c) => {
  const o = parseOptions(c.args, CONTAINER_VALUED);
  const sub = o.operands[0];
  if (!/^(run|create|exec|container)$/.test(sub ?? "")) {
    if (sub === "system" && o.operands[1] === "prune" && has(o, "--volumes"))
      return [classified("infrastructure", "deletes container volumes")];
    if (sub === "volume" && /^(rm|prune|remove)$/.test(o.operands[1] ?? ""))
      return [classified("infrastructure", "deletes container volumes")];
    return none;
  }
  const out: Effect[] = [];
  if (has(o, "--privileged")) out.push(classified("privilege_escalation", "runs a privileged container"));
  const mounts = [
    ...valuesOf(o, "-v", "--volume").map((v) => v.split(":")[0] ?? ""),
    ...valuesOf(o, "--mount").map((m) => /(?:^|,)(?:source|src)=([^,]*)/.exec(m)?.[1] ?? ""),
  ];
  if (
    mounts.some(
      (m) =>
        m === "/" ||
        /^\/(etc|root|boot|proc|sys|dev|var\/run\/docker\.sock|run\/docker\.sock)?$/.test(m) ||
        m === "/var/run/docker.sock" ||
        m === "/run/docker.sock",
    )
  )
    out.push(classified("privilege_escalation", "mounts the host's root or a host control path into a container"));
  if (valuesOf(o, "--pid", "--userns", "--ipc", "--uts").includes("host"))
    out.push(classified("privilege_escalation", "shares the host's namespaces with a container"));
  if (
    valuesOf(o, "--cap-add").some((v) => /^(ALL|SYS_ADMIN|SYS_MODULE|SYS_PTRACE|DAC_READ_SEARCH|SYS_RAWIO)$/i.test(v.replace(/^CAP_/i, "")))
  )
    out.push(classified("privilege_escalation", "gives a container administrative capabilities"));
  if (valuesOf(o, "--security-opt").some((v) => /unconfined|no-new-privileges[:=]false|label[:=]disable/.test(v)))
    out.push(classified("protection_off", "runs a container without its security profile"));
  return out;
};

export const setcap: Handler = (c) =>
  c.args.some((a) => /cap_(setuid|setgid|sys_admin|dac_override|sys_module|sys_ptrace|dac_read_search)|^all[+=]/i.test(a))
    ? [classified("privilege_escalation", "grants file capabilities")]
    : none;
export const nsenter: Handler = (c) =>
  c.args.some((a) => /^(-t|--target)=?1?$/.test(a) || a === "--target=1") || c.args.join(" ").includes("-t 1")
    ? [classified("privilege_escalation", "enters the host's namespaces")]
    : none;

/** What a user types a password into to act as root: an alias of one of them runs whatever it names with that password. */
const PRIVILEGE_PROGRAMS = /^(sudo|su|doas|pkexec|run0)$/;
/**
 * `alias sudo=~/.hidden/fakesudo`, `alias sudo='read -s pw; ...'` (issue 27, fifth round): the
 * privilege program replaced by another, which gets the password and root's commands; read in
 * a start-up file as what it plants. `alias sudo='sudo '` (so that aliases expand after sudo) is
 * the program itself.
 */
export const shadowsPrivilege: Handler = (c) =>
  c.args.some((a) => {
    const m = /^([\w.-]+)=\s*(\S*)/.exec(a);
    return m !== null && PRIVILEGE_PROGRAMS.test(m[1] as string) && (m[2] as string).replace(/^.*\//, "") !== m[1];
  })
    ? [classified("privilege_escalation", "makes a privilege program (sudo, su) run another program")]
    : none;

/** The host paths a container mounting them can escape through (its root, /etc, the runtime's socket, ...). */
const HOST_CONTROL_PATH_RE = /^\/(etc|root|boot|proc|sys|dev|var\/run\/docker\.sock|run\/docker\.sock)?\/?$/;

/**
 * LXD/Incus: `lxc init IMG NAME -c security.privileged=true`, `lxc config set NAME
 * security.privileged true` and a disk device whose source is the host's root (`lxc config
 * device add NAME d disk source=/ path=/mnt/root`): a privileged or host-mounting container, as
 * `docker run --privileged -v /:/host` is.
 */
export const lxc: Handler = (c) => {
  const out: Effect[] = [];
  const privileged = c.args.some(
    (a, i) => /^security\.privileged=(true|1)$/.test(a) || (a === "security.privileged" && /^(true|1)$/.test(c.args[i + 1] ?? "")),
  );
  if (privileged) out.push(classified("privilege_escalation", "runs a privileged container"));
  if (c.args.includes("disk") && c.args.some((a) => a.startsWith("source=") && HOST_CONTROL_PATH_RE.test(a.slice("source=".length))))
    out.push(classified("privilege_escalation", "mounts the host's root or a host control path into a container"));
  return out;
};

/** `gcore PID`: a running process's memory written to a file (the passwords and keys it holds). */
export const gcore: Handler = (c) =>
  c.args.some((a) => /^[0-9]+$/.test(a)) ? [classified("secrets", "dumps a running process's memory")] : none;

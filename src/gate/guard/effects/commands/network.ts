// Network clients: where they connect, what they download and save, what files they send; shells wired to sockets by netcat and socat.
import type { ShellCommand } from "../../shell/records.js";
import { classified, effect, type Effect } from "../effect.js";
import { has, parseOptions, valuesOf } from "../options.js";
import { resolveTarget } from "../targets.js";
import { at, none, set, type Handler } from "./handler.js";

export const looksLikeUrl = (s: string): boolean =>
  /^[a-z][a-z0-9+.-]*:\/\//i.test(s) || /^[\w.-]+\.[a-z]{2,}(:\d+)?(\/|$)/i.test(s) || /^\d{1,3}(\.\d{1,3}){3}(:\d+)?(\/|$)/.test(s);
export const urlBase = (u: string): string => {
  const path = u.replace(/^[a-z]+:\/\/[^/]*/i, "").replace(/[?#].*$/, "");
  return path.slice(path.lastIndexOf("/") + 1);
};
/** `@file` and `<file` values of curl's data options: files whose content is sent. */
export const dataFiles = (vs: string[]): string[] =>
  vs.flatMap((v) => [...v.matchAll(/(?:^|=)[@<]([^;,]+)/g)].map((m) => m[1] as string)).filter((f) => f !== "-");

export const CURL_VALUED = set(
  "-o",
  "--output",
  "-d",
  "--data",
  "--data-binary",
  "--data-raw",
  "--data-urlencode",
  "--data-ascii",
  "-F",
  "--form",
  "--form-string",
  "-T",
  "--upload-file",
  "-H",
  "--header",
  "-u",
  "--user",
  "-X",
  "--request",
  "-A",
  "--user-agent",
  "-e",
  "--referer",
  "-b",
  "--cookie",
  "-c",
  "--cookie-jar",
  "-x",
  "--proxy",
  "-m",
  "--max-time",
  "--connect-timeout",
  "-w",
  "--write-out",
  "-K",
  "--config",
  "--url",
  "-r",
  "--range",
  "--retry",
  "-C",
  "--continue-at",
  "--cacert",
  "--cert",
  "--key",
  "-E",
  "--resolve",
  "--output-dir",
);
export const curl: Handler = (c) => {
  const o = parseOptions(c.args, CURL_VALUED);
  const urls = [...o.operands.filter(looksLikeUrl), ...valuesOf(o, "--url")];
  const out: Effect[] = [effect("network", "connects to a host", urls)];
  const uploads = [
    ...dataFiles(valuesOf(o, "-d", "--data", "--data-binary", "--data-urlencode", "--data-ascii", "-F", "--form")),
    ...valuesOf(o, "-T", "--upload-file"),
  ];
  if (uploads.length > 0) out.push(effect("upload", "sends file content", at(c, uploads)));
  const saved = [...valuesOf(o, "-o", "--output"), ...(has(o, "-O", "--remote-name", "--remote-name-all") ? urls.map(urlBase) : [])];
  if (saved.length > 0) out.push(effect("download", "saves a download", at(c, saved)));
  if (valuesOf(o, "-d", "--data", "--data-binary").includes("@-") || valuesOf(o, "-T", "--upload-file").includes("-"))
    out.push(effect("upload", "sends its input", []));
  // `-d @$file` with the path computed (read as empty): a file is sent, which one is not known.
  else if (
    valuesOf(o, "-d", "--data", "--data-binary", "--data-urlencode", "-F", "--form", "-T", "--upload-file").some(
      (v) => v === "@" || v === "<" || /=[@<]$/.test(v),
    )
  )
    out.push(effect("upload", "sends a file named by a computed path", []));
  return out;
};

export const wget: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set(
      "-O",
      "--output-document",
      "-P",
      "--directory-prefix",
      "-o",
      "--output-file",
      "-U",
      "--user-agent",
      "--header",
      "-t",
      "--tries",
      "-T",
      "--timeout",
      "--post-data",
      "--post-file",
      "--body-file",
      "-e",
      "--execute",
      "-i",
      "--input-file",
    ),
  );
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

export const netcat: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set("-e", "-c", "--exec", "--sh-exec", "--lua-exec", "-p", "-s", "-w", "-i", "-q", "-x", "-X", "-P", "-O", "-T", "-V"),
  );
  const out: Effect[] = [effect("network", "opens a network connection", o.operands)];
  if (valuesOf(o, "-e", "-c", "--exec", "--sh-exec", "--lua-exec").length > 0)
    out.push(
      classified("reverse_shell", has(o, "-l", "--listen") ? "serves a shell on a network port" : "connects a shell to a network socket"),
    );
  return out;
};

export const socat: Handler = (c) => {
  const addrs = c.args.filter((a) => !a.startsWith("-"));
  const out: Effect[] = [effect("network", "opens a network connection", addrs)];
  if (
    addrs.some((a) => /^(exec|system):/i.test(a)) &&
    addrs.some((a) => /^(tcp|udp|openssl|ssl|sctp)[46]?(-connect|-listen|-l)?:/i.test(a))
  )
    out.push(classified("reverse_shell", "connects a program to a network socket"));
  // A file address is sent unless socat only writes it: opened to create, truncate or append, or the receiving end of `-u` (`-U` reverses).
  const receiving = c.args.includes("-u") ? addrs[1] : c.args.includes("-U") ? addrs[0] : undefined;
  const sent = addrs.filter((a) => /^(open|file|gopen):/i.test(a) && a !== receiving && !/,\s*(creat|trunc|append|wronly)\b/i.test(a));
  if (sent.length > 0 && addrs.some((a) => /^(tcp|udp|openssl)/i.test(a)))
    out.push(
      effect(
        "upload",
        "sends a file over the network",
        sent.map((a) => resolveTarget(a.replace(/^[a-z]+:/i, "").split(",")[0] ?? "", c.cwd)),
      ),
    );
  return out;
};

export const remoteCopy: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set("-i", "-P", "-p", "-o", "-F", "-e", "--rsh", "-l", "-S", "-J", "-c", "--exclude", "--include", "--port"),
  );
  const remote = (a: string): boolean => /^[^/]*:/.test(a) && !a.startsWith("/");
  const ops = o.operands;
  const dest = ops.at(-1) ?? "";
  const out: Effect[] = ops.some(remote) || c.name === "sftp" ? [effect("network", "copies over the network", ops.filter(remote))] : [];
  if (remote(dest))
    out.push(
      effect(
        "upload",
        "sends files to a host",
        at(
          c,
          ops.slice(0, -1).filter((a) => !remote(a)),
        ),
      ),
    );
  return out;
};

/** Clients that send the files named in their arguments to a peer (`ab -p`, `hping3 --file`, `lp -h`, `smbclient -c 'put'`, a `put` line fed to ftp). */
export const fileSender: Handler = (c) => [
  effect("network", "sends data to a host", []),
  effect(
    "upload",
    "sends files to a host",
    at(
      c,
      c.args.flatMap((a) => a.split(/[\s=]/)).filter((a) => a.includes("/") || a.startsWith(".")),
    ),
  ),
];

/** `socket -p PROGRAM`: a program wired to a socket. */
export const socketCmd: Handler = (c) => [
  effect("network", "opens a network connection", []),
  ...(c.args.some((a) => /^-\w*p\w*$/.test(a)) ? [classified("reverse_shell", "connects a program to a network socket")] : []),
];

export const dnsOrPing: Handler = (c) => [
  effect("network", "sends a network query", parseOptions(c.args, set("-p", "-c", "-t", "-q", "-x", "-W", "-i", "-s")).operands),
];
export const SSH_VALUED = set("-i", "-p", "-o", "-F", "-l", "-L", "-R", "-D", "-J", "-W", "-E", "-b", "-c", "-m", "-S", "-w", "-Q");
export const ssh: Handler = (c) => [effect("network", "connects to a host", parseOptions(c.args, SSH_VALUED).operands.slice(0, 1))];

/** The command line `ssh HOST COMMAND...` runs on the other host (read like a line of its own), if any. */
export function remoteCommand(c: ShellCommand): string | undefined {
  if (c.name !== "ssh") return undefined;
  const words = parseOptions(c.args, SSH_VALUED).operands.slice(1);
  return words.length > 0 ? words.join(" ") : undefined;
}

/** zsh's `ztcp HOST PORT`: a network connection the shell reads and writes by file descriptor. */
export const ztcp: Handler = (c) => [effect("network", "opens a network connection", c.args.slice(0, 1))];
export const sshfs: Handler = (c) => [
  effect(
    "network",
    "mounts a remote filesystem",
    c.args.filter((a) => a.includes(":")),
  ),
];
/** `code tunnel`: VS Code's remote tunnel, a shell on this machine reachable from outside. */
export const codeTunnel: Handler = (c) =>
  c.args[0] === "tunnel" ? [classified("reverse_shell", "opens a remote tunnel into this machine")] : none;

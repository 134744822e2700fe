// Files a program names, whatever the program (issue 27, ADR 0058). The command table knows
// what about 150 programs do; any other program that names a file in its arguments — an
// operand, an option's value (`tcpdump -w FILE`, `exiftool -filename=FILE`, `nmap -oG=FILE`),
// a path inside an argument (`sqlite3 -cmd '.output FILE'`, `gdb -ex 'dump value FILE ...'`,
// `readelf -a @FILE`) — may read or write it: the guard cannot know which, so it assumes both
// where that matters. A secret file named is read; a place that runs what is written to it
// (a cron table, a systemd unit, a boot script: autorun.ts, system places only) named is
// written. Known programs keep their table entry, plus: a reader reads every file it names
// (`xz -c FILE`, where the table takes FILE for `-c`'s value), and an output option's value
// (`sort -o`, `openssl -out`, `find -fprintf`, `history -w`) is written, as is a system library
// given as an output option's value (`cc -shared -o /usr/lib/x.so`, round 9).
import type { ShellCommand } from "../shell/records.js";
import { INTERPRETERS, SHELLS } from "../command-names.js";
import { autorunPlace } from "./autorun.js";
import { COMMAND_EFFECTS, READERS } from "./command-table.js";
import { effect, type Effect } from "./effect.js";
import { isCaptureDevice, isSecretFile, isSystemLibrary, resolveTarget } from "./targets.js";

/** Programs that look at a file's name, metadata or checksum, never print or change its content. */
const NO_CONTENT = new Set(
  "ls stat file test [ [[ du df readlink realpath basename dirname namei lsattr getfacl chattr tree exa eza lsd which whereis type command hash touch mkdir echo printf true false sleep cd pushd popd md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum wc systemd-analyze run-parts locate mlocate plocate".split(
    " ",
  ),
);
/** Programs that take a key or credential to use it, not to show it (`ssh-add ~/.ssh/id_ed25519`). */
export const KEY_USERS: ReadonlySet<string> = new Set(
  "ssh-add ssh-copy-id sshpass autossh mosh ansible ansible-playbook ansible-pull age sops certbot kubeseal vault step".split(" "),
);
/** Options whose value is a key or certificate the program uses (`--private-key KEY`), for any program. */
export const KEY_OPTION_RE =
  /^(-i|--identity|--private-key|--key|--key-file|--keyfile|--cert|--cacert|--tls-key|--tlskey|--ssl-key|--client-key|--kubeconfig|--credentials-file|--service-account-key-file|--identity-file)$/;
/** Options whose value is a file a known program writes. */
const OUTPUT_OPTION_RE =
  /^(-o|--output|-out|--out|--outfile|--output-file|--output-document|-fprint|-fprint0|-fprintf|-fls|-w|-Logfile|--log-file|--logfile)$/;
/** socat-style addresses that open a file for writing (`open:FILE,creat`). */
const OPEN_ADDRESS_RE = /^(open|create|creat|gopen):/i;

/** One path named in an argument, and how it was named. */
interface Named {
  path: string;
  /** The value of the option before it (`-o FILE`, `--out=FILE`), if it was one. */
  option?: string;
}

/** An absolute, home or dot-relative path inside an argument, after a separator (`=`, `:`, `@`, quotes, `<`, ...). */
const PATH_IN_ARG_RE = /(?:^|[\s=:,;("'<>@`])((?:~|\.{1,2})?\/(?!\/[^/])[^\s"',;)(<>`]*)/g;

/** The paths an argument list names, each with the option whose value it is. */
function namedPaths(args: readonly string[]): Named[] {
  const out: Named[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (!a.includes("/")) continue;
    const prev = args[i - 1];
    const eq = /^(-{1,2}[\w-]+)=/.exec(a);
    // exec with lastIndex, not matchAll: matchAll copies the regex on every call, and this runs
    // for every argument with a slash of every command the guard reads.
    PATH_IN_ARG_RE.lastIndex = 0;
    for (let m = PATH_IN_ARG_RE.exec(a); m !== null; m = PATH_IN_ARG_RE.exec(a)) {
      const path = (m[1] as string).replace(/@$/, "");
      if (path === "/" || path.length < 2) continue;
      const whole = m.index === 0 || (eq !== null && m.index === eq[0].length - 1);
      const option =
        eq !== null && whole
          ? eq[1]
          : whole && prev?.startsWith("-") === true
            ? prev
            : OPEN_ADDRESS_RE.test(a) && m.index === a.indexOf(":")
              ? "open:"
              : undefined;
      out.push({ path, ...(option === undefined ? {} : { option }) });
    }
  }
  return out;
}

const expand = (p: string, home: string, cwd: string): string => resolveTarget(p.startsWith("~/") ? `${home}${p.slice(1)}` : p, cwd);
/** A private key or credential file (the secret files a program uses rather than shows). */
const isKeyLike = (p: string): boolean =>
  /(^|\/)id_[^/]+$|\.(pem|key|p12|pfx|jks|keystore)$|\/\.kube\/config$|credentials(\.json)?$|\.kubeconfig$/.test(p);
/** A file whose content is a secret when read: a secret file (not a key the program uses), or a device that captures the screen or keys. */
const readsSecret = (t: string, home: string, keyUse: boolean): boolean =>
  isCaptureDevice(t) || (isSecretFile(t, home) && !(keyUse && isKeyLike(t)));
/** A system place that runs what is written to it (a file in it, or the directory itself). */
const runsWritten = (t: string, home: string, workspace: string): boolean =>
  autorunPlace(t, home, workspace)?.always === true || autorunPlace(`${t}/x`, home, workspace)?.always === true;

/** What a program reads and writes by the files it names; empty for shells, interpreters and programs that only look at names. */
export function namedFileEffects(c: ShellCommand, home: string, workspace: string): Effect[] {
  // Most commands name no path at all: no scan, no allocation.
  if (!c.args.some((a) => a.includes("/"))) return [];
  if (NO_CONTENT.has(c.name) || SHELLS.has(c.name) || INTERPRETERS.has(c.name) || /^(python|perl|ruby|php|lua|node)[\d.]*$/.test(c.name))
    return [];
  const known = COMMAND_EFFECTS.has(c.name) || COMMAND_EFFECTS.has(c.name.replace(/\..*$/, ""));
  const reader = READERS.has(c.name);
  const reads: string[] = [];
  const writes: string[] = [];
  for (const n of namedPaths(c.args)) {
    const t = expand(n.path, home, c.cwd);
    const keyUse = KEY_USERS.has(c.name) || (n.option !== undefined && KEY_OPTION_RE.test(n.option));
    if ((!known || reader) && readsSecret(t, home, keyUse)) reads.push(t);
    const output = n.option !== undefined && (OUTPUT_OPTION_RE.test(n.option) || n.option === "open:");
    // A system library is written only as an output option's value (`cc -o /usr/lib/x.so`): inspectors name them (`ldd`, `nm`).
    if ((!known || output) && (runsWritten(t, home, workspace) || (output && isSystemLibrary(t)))) writes.push(t);
  }
  const out: Effect[] = [];
  if (reads.length > 0) out.push(effect("read", known ? "reads files it names" : "a program reads a file it names", reads));
  if (writes.length > 0)
    out.push(
      effect("overwrite", known ? "writes to an output file it names" : "a program writes a file it names", writes, { named: true }),
    );
  return out;
}

/** Absolute paths quoted in inline code that writes files (`open("/etc/cron.d/x", "w")`, `writeFileSync`, `Out-File`). */
export function inlineCodeWrites(code: string, c: ShellCommand, home: string, workspace: string): Effect[] {
  // A write call or mode, or awk's `print > "file"`.
  if (
    !/["']w[b+]?["']|["']a[b+]?["']|write|put_contents|Out-File|copy_stream|urlretrieve|download|createWriteStream|FileWriter|fopen|\bcp\(|Set-Content|>>?\s*["']\//i.test(
      code,
    )
  )
    return [];
  const targets = [...code.matchAll(/(?:^|[\s("'=,])(\/[^\s"',;)]+)/g)]
    .map((m) => expand(m[1] as string, home, c.cwd))
    .filter((t) => runsWritten(t, home, workspace));
  return targets.length === 0 ? [] : [effect("overwrite", "inline code writes a file it names", targets, { named: true })];
}

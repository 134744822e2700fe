// Built-in patterns that name a token rather than an effect, waived where the effect model has
// read the whole command and shows the token does no harm (issue 27: effects decide, not
// tokens): `mkfs` on an image file in the workspace, `stat` of a block device, the worker's own
// dotfiles when its home is `/root` (vaglio forbids root's home as a whole), `stat` of the accounts
// files or `/boot` (metadata, not content), an ssh tool loading the worker's own key to use it,
// `rm -rf /` as words a counting command is given (`wc rm -rf /`).
import type { CallViews } from "./argument-views.js";
import { KEY_OPTION_RE, KEY_USERS } from "./effects/named-files.js";
import { isSecretFile, resolveTarget } from "./effects/targets.js";
import type { ShellCommand } from "./shell/records.js";

/** Where the worker is, as the guard's context says. */
interface Where {
  home: string;
  workspace: string;
}

const ROOT_HOME = String.raw`^/root(/|$)`;
const MKFS = String.raw`\bmkfs\b`;
const BLOCK_DEVICES = String.raw`^/dev/(sd|nvme|mmcblk|loop)`;
const BLOCK_DEVICE_RE = /^\/dev\/(sd|nvme|mmcblk|loop)/;
/** Commands that only look at a file's metadata: naming a device to them reads nothing from it. */
const INSPECTORS = new Set([
  "stat",
  "ls",
  "lsblk",
  "blkid",
  "file",
  "df",
  "findmnt",
  "udevadm",
  "readlink",
  "realpath",
  "test",
  "[",
  "[[",
  "du",
  "mountpoint",
]);

/** Path patterns whose files an inspector (`stat`, `ls -l`) only looks at: their metadata, not their content. */
const METADATA_ONLY: ReadonlyMap<string, RegExp> = new Map([
  [String.raw`^/etc/(passwd|shadow|sudoers)`, /^\/etc\/(passwd|shadow|sudoers)/],
  [String.raw`^/boot(/|$)`, /^\/boot(\/|$)/],
]);
const SSH_KEYS = String.raw`(^|/)\.ssh/(.*[^b]|.*[^u]b|.*[^p]ub|.*[^.]pub|b|ub|pub)$`;
/** The ssh family: they use a key given to them to sign, never print or send it. */
const SSH_CLIENTS = new Set(["ssh", "scp", "sftp", "autossh", "sshfs", "mosh", "rsync", "ssh-copy-id"]);
/** Options of other programs whose value is the ssh command they run (`rsync -e "ssh -i KEY"`, `git -c core.sshCommand=...`). */
const SSH_COMMAND_OPTION_RE = /^(-e|--rsh)$|^(--rsh=|core\.sshCommand=|-oProxyCommand=)/;

/** The built-in patterns for a recursive delete of `/` or `~` (Guardian's, vaglio's, gavel's): tokens `rm -rf /` in any text. */
const ROOT_DELETES: ReadonlySet<string> = new Set([
  String.raw`rm\s+-rf\s+/(\s|\*|$)`,
  String.raw`\brm\s+-rf?\s+/(\s|$)`,
  String.raw`\brm\s+-rf?\s+~(\s|$|/)`,
  String.raw`\brm\s+-r\w*\s+(/\*?|~/?\*?|/root/?|/home/?|/etc/?|/usr/?|/var/?|/boot/?)(\s|$)`,
]);
/** Commands that count or look at the words they are given as file names: `wc rm -rf /` counts, it deletes nothing. */
const COUNTERS = new Set(["wc", ...INSPECTORS]);
const DELETERS = new Set(["rm", "unlink", "rmdir", "srm", "shred"]);

const ROOT_PATH_RE = /^\/root(\/|$)/;
/** A dotfile or dot-directory of root's home that holds no keys: `.bashrc`, `.profile`, `.config/nvim/init.lua`. */
const ORDINARY_DOTFILE_RE =
  /^\/root\/\.(?!(ssh|aws|gnupg|kube|docker|azure|oci|password-store|vault-token|netrc|pgpass|git-credentials)(\/|$))[^/]+(\/[^/]+)*$/;

const operands = (c: ShellCommand): string[] => c.args.filter((a) => !a.startsWith("-"));
const inWorkspace = (c: ShellCommand, p: string, where: Where): boolean => {
  const t = resolveTarget(p, c.cwd);
  return t === where.workspace || t.startsWith(`${where.workspace}/`);
};

/** Every command of the call's command fields, when they were all read in full. */
function readCommands(views: CallViews): ShellCommand[] | undefined {
  if (views.unresolved !== undefined || views.commands.length === 0) return undefined;
  return views.commands.flatMap((c) => c.log.commands);
}

/** Whether a built-in pattern's match is waived for this call (see the file's header). */
export function waived(pattern: string, texts: readonly string[], views: CallViews, where: Where, shellTool: boolean): boolean {
  // Root's home as a whole stays forbidden; the worker's own ordinary dotfiles when it is root's do not.
  if (pattern === ROOT_HOME)
    return (
      where.home === "/root" &&
      texts
        .filter((t) => ROOT_PATH_RE.test(t))
        .every((t) => ORDINARY_DOTFILE_RE.test(t) && !isSecretFile(t, where.home) && !/\/\.[\w]*history$/.test(t))
    );
  if (!shellTool) return false;
  const cmds = readCommands(views);
  if (cmds === undefined) return false;
  if (pattern === MKFS) {
    const mkfs = cmds.filter((c) => /^mkfs(\.|$)|^mke2fs$/.test(c.name));
    return (
      mkfs.length > 0 &&
      mkfs.every(
        (c) =>
          c.redirs.length === 0 && operands(c).length > 0 && operands(c).every((p) => !p.startsWith("/dev/") && inWorkspace(c, p, where)),
      )
    );
  }
  // `stat /etc/shadow`, `ls -l /etc/sudoers`, `stat -c %a /boot`: metadata, nothing of the content read or written.
  const metadata = METADATA_ONLY.get(pattern);
  if (metadata !== undefined) {
    const naming = cmds.filter((c) => c.args.some((a) => metadata.test(a)) || c.redirs.some((r) => metadata.test(r.target)));
    return naming.length > 0 && naming.every((c) => INSPECTORS.has(c.name) && !c.redirs.some((r) => metadata.test(r.target)));
  }
  // `ssh-add ~/.ssh/id_ed25519`, `ssh -i ~/.ssh/id_rsa host`, `rsync -e "ssh -i ~/.ssh/id_rsa" ...`: the worker's own key loaded to be used.
  if (pattern === SSH_KEYS) {
    const naming = cmds.filter((c) => c.args.some((a) => a.includes(".ssh/")) || c.redirs.some((r) => r.target.includes(".ssh/")));
    return (
      naming.length > 0 && naming.every((c) => c.redirs.every((r) => !r.target.includes(".ssh/")) && usesOwnKey(c.name, c.args, where))
    );
  }
  // `wc rm -rf /`: the words are file names counted; no command read deletes anything.
  if (ROOT_DELETES.has(pattern)) {
    const naming = cmds.filter((c) => c.args.includes("rm"));
    return naming.length > 0 && naming.every((c) => COUNTERS.has(c.name)) && !cmds.some((c) => DELETERS.has(c.name));
  }
  if (pattern === BLOCK_DEVICES) {
    const naming = cmds.filter((c) => c.args.some((a) => BLOCK_DEVICE_RE.test(a)) || c.redirs.some((r) => BLOCK_DEVICE_RE.test(r.target)));
    return naming.length > 0 && naming.every((c) => INSPECTORS.has(c.name) && !c.redirs.some((r) => BLOCK_DEVICE_RE.test(r.target)));
  }
  return false;
}

/** The worker's own ssh directory, as the shell expanded it or as ssh itself will (`~/.ssh/...` in a quoted option). */
const ownKey = (p: string, where: Where): boolean =>
  (p.startsWith(`${where.home}/.ssh/`) || p.startsWith("~/.ssh/") || p.startsWith("$HOME/.ssh/")) && !p.includes("/../");

/**
 * Whether every argument naming an ssh path gives a key or ssh configuration to a program that
 * uses it: an ssh tool's `-i KEY` / `-F CONFIG` / `-o IdentityFile=KEY`, the keys `ssh-add` loads,
 * any program's key option (`--private-key KEY`), or such an ssh command handed to another
 * program (`rsync -e "ssh -i KEY"`). Another user's key, or a key passed anywhere else, is not.
 */
function usesOwnKey(name: string, args: readonly string[], where: Where): boolean {
  return args.every((a, i) => {
    if (!a.includes(".ssh/")) return true;
    const prev = args[i - 1] ?? "";
    if (SSH_COMMAND_OPTION_RE.test(prev) || SSH_COMMAND_OPTION_RE.test(a)) {
      const words = a.replace(SSH_COMMAND_OPTION_RE, "").trim().split(/\s+/);
      return /(^|\/)ssh$/.test(words[0] ?? "") && usesOwnKey("ssh", words.slice(1), where);
    }
    const key = a.replace(/^-o\s*IdentityFile=|^IdentityFile=/i, "");
    if (!ownKey(key, where)) return false;
    if (KEY_USERS.has(name)) return true;
    return (SSH_CLIENTS.has(name) && /^(-i|-F|-o)$/.test(prev)) || KEY_OPTION_RE.test(prev) || /^-o\s*IdentityFile=/i.test(a);
  });
}

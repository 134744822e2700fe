// Built-in patterns that name a token rather than an effect, waived where the effect model has
// read the whole command and shows the token does no harm (issue 27: effects decide, not
// tokens): `mkfs` on an image file in the workspace, `stat` of a block device, the worker's own
// dotfiles when its home is `/root` (vaglio forbids root's home as a whole).
import type { CallViews } from "./argument-views.js";
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
  if (pattern === BLOCK_DEVICES) {
    const naming = cmds.filter((c) => c.args.some((a) => BLOCK_DEVICE_RE.test(a)) || c.redirs.some((r) => BLOCK_DEVICE_RE.test(r.target)));
    return naming.length > 0 && naming.every((c) => INSPECTORS.has(c.name) && !c.redirs.some((r) => BLOCK_DEVICE_RE.test(r.target)));
  }
  return false;
}

// What a path is to the rules: a system root, a home directory (anyone's), a parent of the
// workspace, a log, a secret file, a device, an accounts or protection file.
import { posix } from "node:path";

/** A path as the command sees it: relative ones resolved against its directory; a trailing `/*` or `/.*` names the directory's contents. */
export function resolveTarget(p: string, cwd: string): string {
  const t = p.startsWith("file://") ? p.slice(7) : p;
  const abs = t.startsWith("/") ? posix.normalize(t) : posix.resolve(cwd, t);
  return abs.length > 1 && abs.endsWith("/") ? abs.slice(0, -1) : abs;
}

/** The directory a glob of its contents names (`/etc/*` → `/etc`), else the path itself. */
export function globParent(p: string): string {
  const m = /^(.*?)\/(\*|\.\*|\*\*|\.\[!.\]\*|\{\*,\.\*\})$/.exec(p);
  return m === null ? p : m[1] === "" ? "/" : (m[1] as string);
}

const SYSTEM_ROOTS: ReadonlySet<string> = new Set([
  "/",
  "/bin",
  "/boot",
  "/dev",
  "/etc",
  "/home",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/media",
  "/mnt",
  "/opt",
  "/proc",
  "/root",
  "/run",
  "/sbin",
  "/snap",
  "/srv",
  "/sys",
  "/usr",
  "/var",
  "/Users",
  "/System",
  "/Library",
  "/Applications",
  "/usr/bin",
  "/usr/sbin",
  "/usr/lib",
  "/usr/lib64",
  "/usr/local",
  "/usr/share",
  "/usr/include",
  "/usr/libexec",
  "/var/lib",
  "/var/log",
  "/var/spool",
  "/var/mail",
  "/var/www",
  "/var/backups",
  "/var/opt",
  "/etc/ssh",
  "/etc/ssl",
  "/etc/systemd",
  "/etc/init.d",
  "/etc/pam.d",
  "/etc/security",
  "/etc/default",
  "/etc/cron.d",
  "/private",
  "/private/etc",
  "/private/var",
]);

/** A directory whose recursive loss breaks the system: `/`, `/etc`, `/usr/lib`, `/var/log`, ... */
export const isSystemRoot = (p: string): boolean => SYSTEM_ROOTS.has(p);

/** A home directory of any user (`/root`, `/home/x`, `/Users/x`) or the worker's own. */
export function isHomeDir(p: string, home: string): boolean {
  return p === home || p === "/root" || /^\/(home|Users)\/[^/]+$/.test(p);
}

/** Under any user's home, or the worker's own. */
export function underAnyHome(p: string, home: string): boolean {
  return p.startsWith(`${home}/`) || p.startsWith("/root/") || /^\/(home|Users)\/[^/]+\//.test(p);
}

/** A strict ancestor of the workspace directory (deleting it deletes the workspace and more). */
export const isWorkspaceAncestor = (p: string, workspace: string): boolean =>
  p !== workspace && (p === "/" || workspace.startsWith(`${p}/`));

/** System logs and shell history. */
export const isLog = (p: string): boolean =>
  /^\/var\/log(\/|$)/.test(p) ||
  /^\/var\/(spool\/)?mail(\/|$)/.test(p) ||
  /^\/var\/audit(\/|$)/.test(p) ||
  /^\/var\/lib\/docker\/containers\/.*-json\.log$/.test(p) ||
  /\/\.(bash_|zsh_|sh_)?history$/.test(p) ||
  /^\/var\/(adm|account)(\/|$)/.test(p) ||
  /^\/run\/log(\/|$)/.test(p) ||
  /\/\.(bash|zsh|sh|python|mysql|psql|node_repl)_?history$/.test(p) ||
  /\/\.zsh_history$/.test(p) ||
  /^\/var\/run\/utmp$|^\/var\/log\/[bw]tmp/.test(p);

/** Block and character devices that hold disks (raw writes destroy filesystems). */
export const isDiskDevice = (p: string): boolean => /^\/dev\/(sd|hd|vd|xvd|nvme|mmcblk|disk|loop|md|dm-|mapper\/|rdisk)/.test(p);

/**
 * Devices that capture what the machine's user sees, types or says: the framebuffer and the
 * consoles' screen memory (`/dev/fb0`, `/dev/vcs1`, `/dev/vcsa`), input events (keystrokes:
 * `/dev/input/event0`, `/dev/input/by-id/...-kbd`), cameras and microphones (`/dev/video0`,
 * `/dev/snd/pcmC0D0c`, `/dev/dsp`). Read, they are a screenshot, a keylogger or a recording.
 */
export const isCaptureDevice = (p: string): boolean =>
  /^\/dev\/(fb\d+|vcsa?\d*|vcsu\d*|input\/.+|video\d+|snd\/pcm.+c|dsp\d*|audio\d*|uinput|hidraw\d+)$/.test(p);

/**
 * Code every program that links or imports it loads: shared libraries anywhere under the system's
 * library directories (`/lib/x86_64-linux-gnu/libaudit.so.1`, `/usr/local/lib/libfoo.so`) and the
 * system interpreters' modules (`/usr/lib/python3/dist-packages/x.py`, a `.pth` start-up file).
 */
export const isSystemLibrary = (p: string): boolean =>
  /^\/(usr\/(local\/)?)?(lib|lib32|lib64|libx32)\/(.+\/)?[^/]+\.so(\.[\d.]+)?$/.test(p) ||
  /^\/(usr\/(local\/)?)?lib\/python[\d.]*\/(site|dist)-packages\/.+\.(py|pth)$/.test(p) ||
  /^\/(usr\/(local\/)?)?(lib|share)\/perl5?\/.+\.pm$/.test(p);

/** The password-hash databases, their backups (`shadow-`) and the store of old passwords (`security/opasswd`). */
const isPasswordHashes = (p: string): boolean =>
  /^\/etc\/(shadow|gshadow|master\.passwd|spwd\.db|security\/opasswd)(-|\.old|\.bak)?$/.test(p);

/** Accounts and privilege files: writing them grants privileges (sudoers, PAM, preloaded libraries, authorized keys). */
export const isAccountsFile = (p: string): boolean =>
  /^\/etc\/(passwd|shadow|group|gshadow|sudoers|master\.passwd)(\.d(\/|$)|-?$)/.test(p) ||
  isPasswordHashes(p) ||
  /^\/(usr\/local\/)?etc\/sudoers(\.d)?(\/|$)/.test(p) ||
  /^\/etc\/pam\.d\//.test(p) ||
  p === "/etc/ld.so.preload" ||
  /\/\.ssh\/authorized_keys2?$/.test(p);

/** Configuration of the kernel's and the system's protections. */
export const isProtectionConfig = (p: string): boolean =>
  /^\/etc\/(selinux|apparmor|apparmor\.d|audit|audisp|rsyslog\.d|rsyslog\.conf|syslog\.conf|syslog-ng|ufw|default\/ufw|firewalld|iptables|nftables\.conf|fail2ban|sysctl\.conf|sysctl\.d|security\/limits|auditd\.conf|systemd\/journald\.conf)(\/|$)/.test(
    p,
  ) ||
  /^\/proc\/sys\/(kernel|fs|net)\//.test(p) ||
  // macOS: Gatekeeper and the quarantine (com.apple.security, LaunchServices), the application firewall (com.apple.alf).
  /^\/Library\/Preferences\/com\.apple\.(security|alf|LaunchServices)[.\w]*\.plist$/.test(p) ||
  /^\/sys\/kernel\/security(\/|$)/.test(p) ||
  false;

/** System binaries and the boot loader: deleting or overwriting them breaks the system. */
export const isSystemBinary = (p: string): boolean => /^\/(usr\/)?(s?bin|lib|lib32|lib64|libexec)\/[^/]+$/.test(p) || /^\/boot\//.test(p);

/** The repository's own history (`.git`). */
export const isGitDir = (p: string): boolean => p === ".git" || p.endsWith("/.git");

const ENV_TEMPLATE_RE = /\.(example|sample|template|dist|defaults?|tmpl|tpl|schema|test)$/i;

/**
 * A file holding secrets: project `.env` files (not their `.example`/`.sample` templates),
 * private keys (`*.pem`, `*.key`, `id_*` but not the `.pub` half), cloud and tool credentials.
 */
export function isSecretFile(p: string, home: string): boolean {
  const base = p.slice(p.lastIndexOf("/") + 1);
  if (base.endsWith(".pub")) return false;
  if (/^\.env(\..+)?$/.test(base) || /^.+\.env$/.test(base)) return !ENV_TEMPLATE_RE.test(base) && base !== ".envrc";
  if (
    /\.(pem|key|p12|pfx|jks|keystore|ppk|kdbx|asc|gpg)$/i.test(base) &&
    !/(^|[._-])(pub|public|cert|certificate|crt|ca|chain|fullchain)([._-]|$)/i.test(base)
  )
    return true;
  if (/^id_(rsa|dsa|ecdsa|ed25519|ecdsa_sk|ed25519_sk)$/.test(base)) return true;
  // Whole stores of keys and tokens, and shell history (commands typed with tokens in them).
  if (/\/\.(ssh|aws|gnupg|kube|docker|azure|oci|password-store)$|\/\.config\/gcloud$|\/Library\/Keychains$/.test(p)) return true;
  if (/\/\.(bash_|zsh_)?history$/.test(p)) return true;
  // Secret stores' own files: macOS keychains, GNOME keyrings, KWallet wallets; a browser profile's saved logins,
  // cookies and the key that decrypts them (Firefox and Chromium keep the same files on Linux and macOS).
  if (/\.keychain(-db)?$|\/Library\/Keychains\/.|\/\.local\/share\/(keyrings|kwalletd)\/./.test(p)) return true;
  if (/^(cookies\.sqlite|logins\.json|key[34]\.db|signons\.sqlite)$/.test(base)) return true;
  if (/^(Login Data|Cookies|Web Data|Local State)$/.test(base) && /(chrom|google|brave|edge|opera|vivaldi)/i.test(p)) return true;
  if (/\/\.ssh\/(?!.*\.pub$)[^/]+$/.test(p) && !/\/\.ssh\/(config|known_hosts(\.old)?)$/.test(p)) return true;
  // Tool configuration that holds tokens when it is a user's (a project's .npmrc usually holds none).
  if (/^\.(npmrc|pypirc|netrc|pgpass|git-credentials|vault-token)$/.test(base) && underAnyHome(p, home)) return true;
  return (
    /\/\.aws\/credentials$|\/\.aws\/config$|\/\.docker\/config\.json$|\/\.kube\/config$|\/\.gnupg\/|\/\.config\/gcloud\/|\/\.azure\/|\/credentials\.json$|\/\.config\/[^/]+\/credentials\.env$|\/\.password-store\//.test(
      p,
    ) ||
    isPasswordHashes(p) ||
    /^\/etc\/ssh\/ssh_host_[a-z0-9]+_key$/.test(p) ||
    /^\/(var\/)?run\/secrets\//.test(p) ||
    // A process's environment or memory (passwords and keys held by a running program), also with the pid computed
    // and so read as empty (`/proc/$PID/mem` reads `/proc/mem`); the kernel's and the machine's memory.
    /^\/proc\/((self|thread-self|[0-9]+)\/)?(environ|mem)$/.test(p) ||
    /^\/proc\/kcore$|^\/dev\/k?mem$/.test(p)
  );
}

/**
 * The system's own data outside any workspace: its configuration, logs and state, other users'
 * homes, the kernel's views of processes. Sent to the network, it is data gathered from the
 * system, whatever the file (an upload of `/etc/host.conf` as much as of `/etc/passwd`).
 */
export const isSystemData = (p: string, home: string): boolean =>
  /^\/(etc|root|boot|proc|sys|var\/(log|lib|spool|mail|backups|db|cache|opt))\/./.test(p) ||
  /^\/usr\/(local\/)?share\/base-passwd\//.test(p) ||
  (underAnyHome(p, home) && !p.startsWith(`${home}/`));

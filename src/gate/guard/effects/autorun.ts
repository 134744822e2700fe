// Places whose content the system runs later (cron tables, systemd units, shell start-up files,
// boot scripts, package-manager hooks, git hooks, login messages, a web root), how their
// content is read as the commands it will become, and the system configuration beyond them
// (docs/guard.md, ADR 0052).
import { isHomeDir, underAnyHome } from "./targets.js";

/** How the content of a place becomes commands. */
export type PayloadFormat =
  /** Lines of `MIN HOUR DOM MON DOW [user] command` or `@reboot [user] command`. */
  | "cron"
  /** `ExecStart=`, `Exec=`, `RUN+="..."` lines (systemd units, desktop entries, D-Bus services, udev rules). */
  | "unit"
  /** apt's `APT::Update::Pre-Invoke {"command";};` and friends: the quoted strings. */
  | "apt"
  /** Source code run by a server or a plugin host (PHP in a web root, a yum/dnf plugin). */
  | "code"
  /** A shell script (profile, rc.local, an init script, a git hook, a motd script). */
  | "shell"
  /** A launchd job's property list: its `Program` and `ProgramArguments` strings, the command it runs. */
  | "plist";

/** A place that runs what is written to it. */
export interface AutorunPlace {
  /** A value-free phrase: "a cron table", "a shell start-up file". */
  what: string;
  format: PayloadFormat;
  /**
   * Writing there is persistence whatever is written (system places, scheduled jobs). When false
   * (the worker's own dotfiles, a git hook in the workspace), only a payload that does harm is:
   * `echo 'export PATH=...' >> ~/.bashrc` is everyday.
   */
  always: boolean;
  /** A download saved there is persistence even where other writes need a harmful payload (system binaries). */
  downloads?: boolean;
}

const place = (what: string, format: PayloadFormat, always = true): AutorunPlace => ({ what, format, always });

const SYSTEM_PLACES: readonly [RegExp, AutorunPlace][] = [
  [
    /^\/etc\/(crontab|anacrontab)$|^\/etc\/cron\.(d|hourly|daily|weekly|monthly)\/|^\/var\/spool\/cron(tabs)?\/|^\/var\/spool\/cron\/crontabs\//,
    place("a cron table", "cron"),
  ],
  [/^\/var\/spool\/(at|atjobs|cron\/atjobs)\//, place("an at job", "shell")],
  [
    /^\/(etc|usr\/lib|lib|run|usr\/local\/lib)\/systemd\/(system|user|system-generators|user-generators|system-environment-generators)(\/|$)|^\/etc\/systemd\//,
    place("a systemd unit or generator", "unit"),
  ],
  [
    /^\/etc\/(profile|bash\.bashrc|bashrc|zshrc|zshenv|zprofile|zlogin|environment|csh\.cshrc|csh\.login)$|^\/etc\/(profile\.d|zsh|fish)\//,
    place("a system shell start-up file", "shell"),
  ],
  [
    /^\/etc\/(rc\.local|rc\.common)$|^\/etc\/rc[0-6S]?\.d\/|^\/etc\/init\.d\/|^\/etc\/init\/|^\/etc\/inittab$/,
    place("a boot script", "shell"),
  ],
  [
    /^\/etc\/default\/grub(\.d\/|$)|^\/boot\/|^\/etc\/initramfs-tools\/|^\/usr\/(lib|share)\/initramfs-tools\/|^\/usr\/lib\/dracut\/modules\.d\/|^\/etc\/dracut\.conf/,
    place("the boot loader or initramfs", "shell"),
  ],
  [
    /^\/etc\/(modules|modules-load\.d\/|modprobe\.d\/)|^\/(usr\/)?lib\/modules-load\.d\//,
    place("the kernel modules loaded at boot", "shell"),
  ],
  [/^\/etc\/update-motd\.d\/|^\/usr\/lib\/update-notifier\//, place("a login message script", "shell")],
  [/^\/etc\/apt\/apt\.conf(\.d\/|$)/, place("a package-manager hook", "apt")],
  [
    /^\/etc\/(yum|dnf)\/(pluginconf\.d|plugins)\/|^\/usr\/lib\/yum-plugins\/|^\/usr\/lib(64)?\/python[\d.]*\/(site|dist)-packages\/dnf-plugins\/|^\/var\/lib\/dpkg\/info\/.*\.(preinst|postinst|prerm|postrm)$/,
    place("a package-manager hook", "code"),
  ],
  [/^\/etc\/udev\/rules\.d\/|^\/(usr\/)?lib\/udev\/rules\.d\//, place("a udev rule", "unit")],
  [/^\/etc\/xdg\/autostart\/|^\/usr\/share\/dbus-1\/|^\/etc\/dbus-1\//, place("an autostart entry or D-Bus service", "unit")],
  [
    /^\/etc\/NetworkManager\/dispatcher\.d\/|^\/etc\/network\/if-(up|down|pre-up|post-down)\.d\/|^\/etc\/ppp\/ip-(up|down)\.d\//,
    place("a network event script", "shell"),
  ],
  [
    /^\/(usr\/)?lib(64)?\/(x86_64-linux-gnu\/|aarch64-linux-gnu\/)?security\/pam_[^/]+\.so$|^\/etc\/polkit-1\/|^\/usr\/share\/polkit-1\/rules\.d\//,
    place("an authentication module or rule", "code"),
  ],
  [/^\/etc\/ssh\/sshrc$|^\/etc\/ssh\/sshd_config(\.d\/|$)/, place("the SSH server's configuration", "shell")],
  [/^\/(usr\/(local\/)?)?s?bin\/[^/]+$/, { what: "a command on the system's PATH", format: "shell", always: false, downloads: true }],
  // Where the system's programs, libraries and interpreters' modules live (not sources, headers, shared data such as keyrings, or
  // /usr/local/etc, which is system configuration: a write there is persistence whatever it holds).
  [
    /^\/(usr\/(?!(local\/)?(src|include|share|etc)\/)|lib|lib32|lib64|libx32|bin|sbin)/,
    { what: "a system program or library directory", format: "shell", always: false, downloads: true },
  ],
  // launchd's jobs (macOS): what a systemd unit is on Linux.
  [/^\/(System\/)?Library\/(LaunchAgents|LaunchDaemons)\//, place("a launchd job", "plist")],
  [
    /^\/var\/www\/|^\/srv\/(www|http)\/|^\/usr\/share\/nginx\/html\/|^\/usr\/local\/apache2\/htdocs\/|^\/var\/lib\/tomcat[\d]*\/webapps\//,
    place("a web root", "code"),
  ],
];

/** Files Python runs at every interpreter start: site directories' `.pth` files and the customize modules. */
const PYTHON_STARTUP_RE = /\.pth$|(^|\/)(sitecustomize|usercustomize)\.py$/;

/** The first directories of every system place: other paths skip the table. */
const SYSTEM_ROOT_RE = /^\/(etc|var|usr|lib|lib64|run|boot|srv|bin|sbin|Library|System)\//;

/** The start-up files of a user's shell and session, in any home. */
const USER_STARTUP_RE =
  /\/\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zshenv|zprofile|zlogin|zlogout|cshrc|tcshrc|kshrc|mkshrc|xinitrc|xsession|xprofile)$|\/\.config\/fish\/config\.fish$/;

/** What a path is as a place that runs its content later, if it is one. */
export function autorunPlace(p: string, home: string, workspace: string): AutorunPlace | undefined {
  if (SYSTEM_ROOT_RE.test(p)) for (const [re, pl] of SYSTEM_PLACES) if (re.test(p)) return pl;
  if (underAnyHome(p, home)) {
    if (/\/\.config\/systemd\/user\//.test(p)) return place("a user systemd unit", "unit");
    if (/\/Library\/LaunchAgents\//.test(p)) return place("a user launchd job", "plist");
    if (/\/\.config\/autostart\//.test(p)) return place("an autostart entry", "unit");
    if (/\/\.ssh\/rc$/.test(p)) return place("a login script", "shell");
    // Another user's start-up file runs code as that user; the worker's own is its to edit.
    if (USER_STARTUP_RE.test(p)) return place("a shell start-up file", "shell", !p.startsWith(`${home}/`));
  }
  // Python runs a `.pth` file's import lines and `sitecustomize`/`usercustomize` at every start, wherever its
  // site directory is (often computed: `$(python3 -c 'import site; ...')`), so the file's name decides.
  if (PYTHON_STARTUP_RE.test(p)) return place("a Python start-up hook", "code");
  // A package's maintainer script runs as root when the package is installed.
  if (/\/DEBIAN\/(preinst|postinst|prerm|postrm)$/.test(p)) return place("a package's install script", "shell", false);
  // A hook outside the workspace's own repository runs in someone else's git commands (`$repo/hooks/x` with the repository computed).
  if (
    /\/\.git\/hooks\/[^/]+$/.test(p) ||
    /^\/hooks\/(pre|post)-(commit|checkout|merge|receive|rewrite|push|applypatch)$|^\/hooks\/(update|prepare-commit-msg|commit-msg)$/.test(
      p,
    )
  )
    return place("a git hook", "shell", !p.startsWith(`${workspace}/`) && !p.startsWith(`${home}/`));
  return undefined;
}

/**
 * System configuration: writing, moving or deleting it changes how the system behaves for every
 * user (PAM, limits, package sources, name resolution, TLS trust, account databases and their
 * backups): everything under `/etc` (macOS's `/Library/Preferences` too), beyond the files the other rules name.
 */
export const isSystemConfig = (p: string): boolean =>
  /^\/(usr\/local\/|private\/)?etc\/./.test(p) || TRUST_STORE_RE.test(p) || /^\/Library\/(Managed )?Preferences\/./.test(p);

/**
 * The system's certificate trust stores outside `/etc` (Debian's and FreeBSD's): a certificate
 * put there (`mv ca.crt /usr/local/share/ca-certificates`, the directory itself as the target) is
 * trusted by every TLS client once the store is rebuilt.
 */
const TRUST_STORE_RE = /^\/usr\/(local\/)?share\/(ca-certificates|certs)(\/|$)|^\/usr\/share\/pki\/ca-trust-source(\/|$)/;

/** Where programs are found on PATH: a download saved there replaces or adds a system command. */
export const isSystemBinDir = (p: string): boolean => /^\/(usr\/(local\/)?)?s?bin\/[^/]+$/.test(p);

/** A home's dotfile (not under the workspace): uploading one sends the user's configuration and tokens. */
export const isDotfile = (p: string, home: string): boolean => underAnyHome(p, home) && /\/\.[^/]+$/.test(p) && !isHomeDir(p, home);

/** The commands each line of a payload becomes, by its place's format. */
export function payloadLines(content: string, format: PayloadFormat, cronUser: boolean): string[] {
  const text = content.length > 16_384 ? content.slice(0, 16_384) : content;
  if (format === "shell") return [text];
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  if (format === "cron") {
    const out: string[] = [];
    for (const l of lines) {
      if (/^[A-Za-z_]\w*=/.test(l)) continue;
      const m = /^(@\w+|(\S+\s+){4}\S+)\s+(.*)$/.exec(l);
      if (m === null) continue;
      const rest = m[3] as string;
      out.push(rest);
      // /etc/crontab and /etc/cron.d name the user first: read the line with and without it.
      const user = /^([a-z_][\w-]*)\s+(.+)$/.exec(rest);
      if (cronUser && user !== null) out.push(user[2] as string);
    }
    return out;
  }
  if (format === "unit") {
    return lines.flatMap((l) => {
      const exec = /^(?:Exec\w*|TryExec)\s*=\s*[-@:+!]*(.+)$/.exec(l);
      if (exec !== null) return [exec[1] as string];
      return [...l.matchAll(/RUN\{?\w*\}?\+?=\s*"([^"]*)"/g)].map((m) => m[1] as string);
    });
  }
  if (format === "plist") return plistCommands(text);
  if (format === "apt") return [...text.matchAll(/"((?:\\.|[^"\\])*)"/g)].map((m) => (m[1] as string).replace(/\\(.)/g, "$1"));
  return [];
}

/** The command lines of a launchd job: `ProgramArguments`' strings as one line's words (single-quoted), `Program` alone. */
function plistCommands(text: string): string[] {
  const out: string[] = [];
  const args = /<key>\s*ProgramArguments\s*<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(text);
  if (args !== null) {
    const words = [...(args[1] as string).matchAll(/<string>([\s\S]*?)<\/string>/g)].map((m) => unescapeXml(m[1] as string));
    if (words.length > 0) out.push(words.map((w) => `'${w.replace(/'/g, "'\\''")}'`).join(" "));
  }
  const program = /<key>\s*Program\s*<\/key>\s*<string>([\s\S]*?)<\/string>/.exec(text);
  if (program !== null) out.push(`'${unescapeXml(program[1] as string).replace(/'/g, "'\\''")}'`);
  return out;
}

const unescapeXml = (s: string): string =>
  s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");

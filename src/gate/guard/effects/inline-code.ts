// Code given inline to an interpreter (`python3 -c`, `perl -e`, `node -e`, `php -r`, `awk
// '...'`): what it deletes, reads, connects to and runs, read from the calls it makes. The
// shell commands it runs (`os.system('...')`, `subprocess.run([...])`) go back to the shell
// reader. Not a parser: string arguments of well-known calls only (docs/guard.md, misses).
import { SHELLS } from "../command-names.js";
import type { ShellCommand } from "../shell/records.js";
import { COMMAND_EFFECTS } from "./command-table.js";
import { classified, effect, type Effect } from "./effect.js";
import { resolveTarget } from "./targets.js";

/** The option that takes inline code, per interpreter (awk: its first operand). */
const CODE_OPTION: Readonly<Record<string, RegExp>> = {
  python: /^-[a-zA-Z]*c$/,
  python2: /^-[a-zA-Z]*c$/,
  python3: /^-[a-zA-Z]*c$/,
  perl: /^-[a-zA-Z]*[eE]$/,
  ruby: /^-[a-zA-Z]*e$/,
  lua: /^-e$/,
  node: /^(-e|--eval|-p|--print)$/,
  nodejs: /^(-e|--eval|-p|--print)$/,
  bun: /^(-e|--eval|-p|--print)$/,
  deno: /^eval$/,
  julia: /^-e$/,
  jrunscript: /^-e$/,
  php: /^-r$/,
  pwsh: /^(-c|-Command|-EncodedCommand)$/i,
  powershell: /^(-c|-Command)$/i,
  osascript: /^-e$/,
  tclsh: /^$/,
  Rscript: /^-e$/,
};

/** Options and subcommands that give a program code to run, in the interpreters the table does not name (`crystal eval`, `v -e`, `jjs -e`). */
const UNKNOWN_CODE_OPTION_RE = /^(-e|-r|-c|-E|-x|--eval|--exec|--execute|--command|--code|--run|eval|exec|-eval|-exec)$/;
/** Programs whose output is their arguments: `echo -e '...'` prints text, whatever it looks like. */
const PRINTS_ARGUMENTS = new Set(["echo", "printf", "print", "logger", "wall", "notify-send", "banner", "figlet", "cowsay"]);
/** Text that reads as code rather than a name or a path: a call, a statement separator or a block. */
const LOOKS_LIKE_CODE_RE = /[A-Za-z_]\w*\s*\(|;|\{/;

/**
 * Inline code given to a program the command table does not know (issue 27, round 3): the value
 * of a code option or subcommand (`crystal eval '...'`), when it reads as code, is read by what it
 * does, as a known interpreter's is.
 */
function unknownInterpreterCode(c: ShellCommand): string | undefined {
  if (COMMAND_EFFECTS.has(c.name) || SHELLS.has(c.name) || PRINTS_ARGUMENTS.has(c.name)) return undefined;
  const i = c.args.findIndex((a) => UNKNOWN_CODE_OPTION_RE.test(a));
  const code = i < 0 ? undefined : c.args[i + 1];
  return code !== undefined && code.length > 6 && !/^[\w./~-]+$/.test(code) && LOOKS_LIKE_CODE_RE.test(code) ? code : undefined;
}

/** The inline code of an interpreter command, if it has any. */
export function inlineCode(c: ShellCommand): string | undefined {
  // lua5.1, perl5.36, python3.11: the interpreter without its version.
  const name = /^(lua|perl|ruby|php)[\d.]+$/.test(c.name)
    ? c.name.replace(/[\d.]+$/, "")
    : /^python[\d.]+$/.test(c.name)
      ? "python"
      : c.name;
  if (name === "awk" || name === "gawk" || name === "mawk") {
    const prog = c.args.find((a, i) => !a.startsWith("-") && !/^-[fFv]$/.test(c.args[i - 1] ?? ""));
    return prog;
  }
  // gdb runs python given with `-ex 'python ...'` (GTFOBins' capabilities shell), beside its `!cmd` escapes (embedded.ts).
  if (name === "gdb" || name === "gdb-multiarch") {
    const py = c.args.flatMap((a, i) =>
      /^(-ex|--ex|-eval-command|--eval-command|-iex)$/.test(c.args[i - 1] ?? "") && /^(python|py|pi)\s/.test(a)
        ? [a.replace(/^\S+\s+/, "")]
        : [],
    );
    return py.length > 0 ? py.join("; ") : undefined;
  }
  const re = CODE_OPTION[name];
  if (re === undefined) return unknownInterpreterCode(c);
  // ruby -rsocket -e '...': the library options before it are part of the code's meaning.
  const libs = (end: number): string =>
    c.args
      .slice(0, end)
      .filter((a) => /^-(r|M|m)\w/.test(a))
      .join(" ");
  const i = c.args.findIndex((a) => re.test(a));
  if (i >= 0) return `${libs(i)} ${c.args[i + 1] ?? ""}`;
  // `-e'code'` written without a space: the code is the rest of the word.
  const letters = name === "php" ? "r" : name.startsWith("python") ? "c" : "eE";
  const attached = /^(python|perl|ruby|php|lua|node)/.test(name)
    ? c.args.findIndex((a) => a.length > 3 && a.startsWith("-") && letters.includes(a.charAt(1)))
    : -1;
  return attached >= 0 ? `${libs(attached)} ${(c.args[attached] as string).slice(2)}` : undefined;
}

/** A quoted string literal: its quote is group 2n+1 and its text group 2n+2 for the n-th literal of a pattern (rx numbers them). */
const quoted = (n: number): string => {
  const g = String(2 * n + 1);
  return "(['\"`])((?:\\\\.|(?!\\" + g + ").)*)\\" + g;
};
const rx = (s: string): RegExp => {
  let n = 0;
  return new RegExp(
    s.replace(/Q/g, () => quoted(n++)),
    "g",
  );
};

const DELETE_CALLS = rx(
  String.raw`\b(?:shutil\.rmtree|rmtree|FileUtils\.(?:rm_rf|rm_r|remove_dir|remove_entry(?:_secure)?)|(?:fs|require\s*\(\s*['"](?:node:)?fs['"]\s*\))\.(?:rmSync|rmdirSync|rm|rmdir)|fse?\.remove(?:Sync)?|rimraf(?:\.sync)?|Remove-Item|delete POSIX file)\s*\(?\s*Q`,
);
const UNLINK_CALLS = rx(
  String.raw`\b(?:os\.(?:remove|unlink|rmdir|removedirs)|unlink(?:Sync)?|File\.(?:delete|unlink)|Path\s*\(\s*Q\s*\)\.(?:unlink|rmdir))\s*\(?\s*Q`,
);
const READ_CALLS = rx(
  String.raw`\b(?:open|readFileSync|readFile|createReadStream|File\.read|IO\.read|file_get_contents|fopen|Get-Content|io\.open|read_text|read_bytes)\s*\(?\s*Q`,
);
const PATH_READ = rx(String.raw`\bPath\s*\(\s*Q\s*\)\.read_(?:text|bytes)`);
const PERL_OPEN = /\bopen\s*\(?\s*(?:my\s+)?\$?\w+\s*,\s*(?:(['"])<\1\s*,\s*)?(['"])<?\s*([^'"]+)\2/g;
const SHELL_CALLS = rx(
  String.raw`\b(?:os\.system|os\.popen|os\.execute|io\.popen|subprocess\.\w+|system|exec|execSync|spawnSync|spawn|shell_exec|passthru|popen|IO\.popen|Kernel\.system|%x|run|do shell script)\s*\(?\s*Q`,
);
const SHELL_LISTS = /\b(?:subprocess\.\w+|os\.exec\w*|spawn(?:Sync)?|execFile(?:Sync)?|Popen|call|run|check_output)\s*\(\s*\[([^\]]*)\]/g;
const BACKTICKS = /`([^`]+)`/g;
const NETWORK_RE =
  /\b(net\.Dial|require\s*\(\s*["'](?:node:)?(?:https?|net)["']\s*\)|using Sockets|java\.net\.Socket|urlopen|urllib|requests\.(get|post|put)|http\.client|httplib|socket|fsockopen|TCPSocket|IO::Socket|LWP|Net::HTTP|open-uri|URI\.open|fetch\s*\(|https?\.(get|request)|net\.(Socket|connect|createConnection)|curl_exec|Invoke-WebRequest|Invoke-RestMethod|WebClient|\/inet\/tcp\/|\/dev\/tcp\/)/;
const SOCKET_RE =
  /(net\.Dial|require\s*\(\s*["'](?:node:)?net["']\s*\)|using Sockets|java\.net\.Socket|\bsocket|fsockopen|TCPSocket|TCPServer|IO::Socket|net\.(Socket|connect|createConnection)|TCPClient|\/inet\/tcp\/|\/dev\/tcp\/|Socket\.new|\bsocket\.tcp\b)/i;
const SPAWN_RE =
  /(exec\.Command|subprocess|pty\.spawn|os\.dup2|\bexec\w*\s*[(\s"']|\bsystem\b|\bspawn\s*\(|\bpopen|\bos\.execute|\/bin\/(ba|z|da)?sh|cmd\.exe|child_process|\|&?\s*getline|\bsh\b\s*-i|STDIN\.reopen|\$stdin\.reopen|fdopen|proc_open|ProcessBuilder|\brun\(pipeline|shell_exec|passthru|\bProcess\.(new|run|exec)\b|`\s*(\/bin\/)?(ba|da|z)?sh\b)/;
const EVAL_FETCH_RE =
  /\b(exec|eval|execfile|Function|instance_eval|Invoke-Expression|iex)\s*\(?[\s\S]*\b(urlopen|urllib|requests\.get|https?\.get|fetch\s*\(|LWP|Net::HTTP|open-uri|URI\.open|file_get_contents\s*\(\s*['"]https?:|curl_exec|DownloadString|Invoke-WebRequest|iwr)/;
const FORK_RE =
  /\bfork\s+while\s+fork\b|while\s*\(?\s*(True|1|true)\s*\)?\s*:?\s*\{?\s*os\.fork\(\)|loop\s*\{\s*fork\s*\}|for\s*\(\s*;\s*;\s*\)\s*\{?\s*fork\(\)|while\s*\(\s*1\s*\)\s*\{?\s*fork\(\)/;
/** A web shell: a server-side page that runs what a request sends. */
const WEB_SHELL_RE =
  /\b(system|exec|passthru|shell_exec|popen|proc_open|eval|assert|pcntl_exec)\s*\(\s*(\$_(GET|POST|REQUEST|COOKIE|SERVER)|base64_decode\s*\(\s*\$_)|Runtime\.getRuntime\(\)\.exec\s*\(\s*request\.getParameter|`\$_(GET|POST|REQUEST)/;
/**
 * Code that makes its process root (then whatever it runs is root's): a set*uid call given 0 in
 * any language — python's `os.setuid(0)`, perl's `POSIX::setuid(0)`, PHP's `posix_setuid(0)`,
 * node's `process.setuid(0)`, ruby's `Process::Sys.setuid(0)`, Go's `syscall.Setuid(0)`, C's
 * `setuid(0)` — ruby's `Process.uid = 0`; or a file given a setuid or setgid mode.
 */
const SETUID_RE =
  /\b(?:[\w$]+(?:\.|::))*(?:posix_)?set(?:e|re|res)?[ug]id\s*\(\s*0\s*[,)]|\bProcess(?:::Sys)?\.(?:e?uid)\s*=\s*0\b|\bos\.chmod\s*\([^)]*0o?[2467][0-7]{3}/i;

function strings(code: string, re: RegExp, group: number): string[] {
  re.lastIndex = 0;
  return [...code.matchAll(re)].map((m) => (m[group] ?? "").replace(/\\(.)/g, "$1"));
}

/** Effects of inline code, and the shell command lines it runs (for the shell reader). */
export function inlineCodeEffects(code: string, c: ShellCommand): { effects: Effect[]; shellLines: string[] } {
  const at = (ps: string[]): string[] => ps.filter((p) => p !== "").map((p) => resolveTarget(p, c.cwd));
  const effects: Effect[] = [];
  const deleted = strings(code, DELETE_CALLS, 2);
  if (deleted.length > 0) effects.push(effect("delete", "deletes recursively (inline code)", at(deleted), { recursive: true }));
  const unlinked = [...strings(code, UNLINK_CALLS, 2), ...strings(code, UNLINK_CALLS, 4)];
  if (unlinked.length > 0) effects.push(effect("delete", "deletes files (inline code)", at(unlinked)));
  const read = [...strings(code, READ_CALLS, 2), ...strings(code, PATH_READ, 2), ...strings(code, PERL_OPEN, 3)].filter(
    (p) => !/^https?:/.test(p),
  );
  if (read.length > 0) effects.push(effect("read", "reads files (inline code)", at(read)));
  const network = NETWORK_RE.test(code);
  if (network) effects.push(effect("network", "connects to a host (inline code)", []));
  if (SOCKET_RE.test(code) && SPAWN_RE.test(code))
    effects.push(classified("reverse_shell", "connects a shell to a network socket (inline code)"));
  if (EVAL_FETCH_RE.test(code)) effects.push(classified("remote_code", "runs downloaded code (inline code)"));
  if (FORK_RE.test(code)) effects.push(classified("resource_abuse", "forks without end (inline code)"));
  if (WEB_SHELL_RE.test(code)) effects.push(classified("remote_code", "runs the commands a request sends (a web shell)"));
  if (SETUID_RE.test(code)) effects.push(classified("privilege_escalation", "makes its process root or sets a setuid bit (inline code)"));
  if (network && /\bos\.environ\b|process\.env\b|\$ENV\b|ENV\[/.test(code) && /\b(post|send|write|request|urlopen)\b/.test(code))
    effects.push(classified("exfiltration", "sends the environment to the network (inline code)"));
  const shellLines = [
    ...strings(code, SHELL_CALLS, 2),
    ...listCommands(code),
    ...(c.name === "perl" || c.name === "ruby" ? strings(code, BACKTICKS, 1) : []),
  ];
  return { effects, shellLines };
}

/** `subprocess.run(['rm', '-rf', '/'])`: a list of quoted words as one command line. */
function listCommands(code: string): string[] {
  SHELL_LISTS.lastIndex = 0;
  return [...code.matchAll(SHELL_LISTS)]
    .map((m) => [...(m[1] ?? "").matchAll(/(['"])((?:\\.|(?!\1).)*)\1/g)].map((w) => `'${(w[2] ?? "").replace(/'/g, "")}'`).join(" "))
    .filter((l) => l !== "");
}

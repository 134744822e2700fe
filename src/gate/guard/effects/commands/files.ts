// What commands do to files: deletes, overwrites, copies, moves, permissions, reads, archives.
import { classified, effect, type Effect } from "../effect.js";
import { has, parseOptions, valuesOf } from "../options.js";
import { at, none, set, type Handler } from "./handler.js";

export const rm: Handler = (c) => {
  const o = parseOptions(c.args);
  const recursive = has(o, "-r", "-R", "--recursive");
  return [effect("delete", recursive ? "deletes recursively" : "deletes files", at(c, o.operands), { recursive })];
};

/** find's roots: the operands before its expression. */
export function findRoots(args: readonly string[]): string[] {
  const roots: string[] = [];
  for (const a of args) {
    if (a.startsWith("-") || a === "(" || a === "!") break;
    roots.push(a);
  }
  return roots.length > 0 ? roots : ["."];
}

export const find: Handler = (c) => {
  const exec = c.args.findIndex((a) => /^-(exec|execdir|ok|okdir)$/.test(a));
  const deletes =
    c.args.includes("-delete") || (exec >= 0 && /^(rm|shred|unlink|rmdir)$/.test((c.args[exec + 1] ?? "").replace(/^.*\//, "")));
  const out: Effect[] = deletes ? [effect("delete", "deletes what find matches", at(c, findRoots(c.args)), { recursive: true })] : [];
  // `find / -name id_rsa -exec cp {} ...`: what it runs on each match reads files of that name.
  const names = c.args
    .flatMap((a, i) => (/^-i?(name|path)$/.test(a) ? [c.args[i + 1] ?? ""] : []))
    .filter((n) => n !== "" && !/[*?[]/.test(n.replace(/^\*\//, "")));
  // `-fprint FILE`, `-fls FILE`: find writes its listing to FILE (`find . -fprint /etc/passwd` empties the accounts file).
  const written = c.args.flatMap((a, i) => (/^-(fprint|fprint0|fprintf|fls)$/.test(a) ? [c.args[i + 1] ?? ""] : []));
  if (written.length > 0) out.push(effect("overwrite", "writes its listing to a file", at(c, written)));
  if (exec >= 0 && !deletes && names.length > 0)
    out.push(
      effect(
        "read",
        "reads what find matches",
        names.map((n) => `/found/${n.replace(/^\*\//, "")}`),
      ),
    );
  return out;
};

export const shred: Handler = (c) => {
  const o = parseOptions(c.args, set("-n", "-s", "--iterations", "--size", "--random-source"));
  return [
    effect("overwrite", "shreds files", at(c, o.operands)),
    ...(has(o, "-u", "--remove") ? [effect("delete", "shreds and deletes files", at(c, o.operands))] : []),
  ];
};

export const truncate: Handler = (c) => {
  const o = parseOptions(c.args, set("-s", "--size", "-r", "--reference"));
  return [effect("overwrite", "truncates files", at(c, o.operands))];
};

export const dd: Handler = (c) => {
  const out = c.args.filter((a) => a.startsWith("of=")).map((a) => a.slice(3));
  const inp = c.args.filter((a) => a.startsWith("if=")).map((a) => a.slice(3));
  return [
    ...(out.length > 0 ? [effect("overwrite", "writes raw data", at(c, out))] : []),
    ...(inp.length > 0 ? [effect("read", "reads raw data", at(c, inp))] : []),
  ];
};

/** Options that make a filesystem editor, checker or drive tool write the device (a checker writes unless told `-n`). */
const DISK_WRITE: Readonly<Record<string, (args: readonly string[]) => boolean>> = {
  debugfs: (a) => a.some((x) => /^-[a-zA-Z]*w/.test(x)),
  xfs_db: (a) => a.some((x) => /^-[a-zA-Z]*x/.test(x)),
  hdparm: (a) =>
    a.some((x) =>
      /^--(security-erase|security-erase-enhanced|write-sector|trim-sector-ranges|fwdownload|dco-restore|make-bad-sector)/.test(x),
    ),
  tune2fs: (a) => a.some((x) => x.startsWith("-") && x !== "-l"),
  resize2fs: (a) => !a.includes("-P"),
  zerofree: () => true,
  e2fsck: (a) => !a.some((x) => /^-[a-zA-Z]*n/.test(x)),
  fsck: (a) => !a.some((x) => /^-[a-zA-Z]*n/.test(x)),
  xfs_repair: (a) => !a.some((x) => /^-[a-zA-Z]*n/.test(x)),
};
/**
 * A filesystem editor, checker or drive tool that writes the device it opens (`debugfs -w
 * /dev/sda1`, `xfs_db -x`, `hdparm --security-erase`, `tune2fs`, `e2fsck -y`): a disk written
 * below its filesystem, as `mkfs` writes it (round 9). Read-only forms write nothing.
 */
export const diskEditor: Handler = (c) => {
  const writes = DISK_WRITE[c.name.replace(/\..*$/, "")]?.(c.args) === true;
  const devices = c.args.filter((p) => p.startsWith("/dev/"));
  return writes && devices.length > 0 ? [effect("overwrite", "edits a filesystem or drive below its files", at(c, devices))] : [];
};

export const diskTool =
  (what: string): Handler =>
  (c) => [
    effect(
      "overwrite",
      what,
      at(
        c,
        parseOptions(c.args, set("-t", "-L", "-b", "-O")).operands.filter((p) => p.startsWith("/dev/")),
      ),
    ),
  ];

/**
 * Where a copy or move writes: the destination, and when it is written as a directory (`-t DIR`,
 * `DIR/`) each source's name inside it (`mv file /etc/` writes `/etc/file`).
 */
function destinations(target: readonly string[], operands: readonly string[]): { sources: string[]; dest: string[] } {
  const sources = target.length > 0 ? [...operands] : operands.slice(0, -1);
  const dest = target.length > 0 ? [...target] : operands.slice(-1);
  const dirs = dest.filter((d) => target.length > 0 || d.endsWith("/"));
  const inside = dirs.flatMap((d) => sources.map((s) => `${d.replace(/\/+$/, "")}/${s.replace(/\/+$/, "").replace(/^.*\//, "")}`));
  return { sources, dest: [...dest, ...inside.filter((p) => !p.endsWith("/"))] };
}

/** cp/install: the last operand is written, the others read; `install -m 4755` sets the setuid bit as `chmod` does. */
export const copy: Handler = (c) => {
  const o = parseOptions(c.args, set("-t", "--target-directory", "-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix"));
  const { sources, dest } = destinations(valuesOf(o, "-t", "--target-directory"), o.operands);
  const out = [effect("read", "copies files", at(c, sources)), effect("overwrite", "writes a copy", at(c, dest))];
  if (c.name === "install" && valuesOf(o, "-m", "--mode").some((m) => m.split(",").some((x) => SETUID_MODE_RE.test(x))))
    out.push(effect("permissions", "sets the setuid or setgid bit (install -m)", at(c, dest), { class: "privilege_escalation" }));
  return out;
};

export const mv: Handler = (c) => {
  const o = parseOptions(c.args, set("-t", "--target-directory", "-S", "--suffix"));
  const { sources, dest } = destinations(valuesOf(o, "-t", "--target-directory"), o.operands);
  return [effect("delete", "moves files away", at(c, sources), { recursive: true }), effect("overwrite", "moves files over", at(c, dest))];
};

export const ln: Handler = (c) => {
  const o = parseOptions(c.args, set("-t", "--target-directory", "-S", "--suffix"));
  return has(o, "-f", "--force") && o.operands.length >= 2
    ? [effect("overwrite", "replaces a file with a link", at(c, o.operands.slice(-1)))]
    : none;
};

export const tee: Handler = (c) => {
  const o = parseOptions(c.args);
  return has(o, "-a", "--append")
    ? [effect("overwrite", "appends to files", at(c, o.operands), { append: true })]
    : [effect("overwrite", "overwrites files", at(c, o.operands))];
};

export const sed: Handler = (c) => {
  const o = parseOptions(c.args, set("-e", "--expression", "-f", "--file", "-l", "--line-length"));
  const files = valuesOf(o, "-e", "--expression", "-f", "--file").length > 0 ? o.operands : o.operands.slice(1);
  const inPlace = [...o.flags].some((f) => f === "-i" || f.startsWith("--in-place"));
  return inPlace ? [effect("overwrite", "edits files in place", at(c, files))] : [effect("read", "reads files", at(c, files))];
};

export const SETUID_MODE_RE = /^([0-7]?[2467][0-7]{3}|[ugoa]*[+=][rwxXt]*s[rwxXst]*)$/;
export const chmod: Handler = (c) => {
  const o = parseOptions(
    c.args.filter((a) => !/^[-+=][rwxXstugo]+$/.test(a) || a.startsWith("--")),
    set("--reference"),
  );
  const modeArg = c.args.find((a) => !a.startsWith("-") || /^-[rwxXst]+$/.test(a)) ?? "";
  const targets = at(
    c,
    o.operands.filter((a) => a !== modeArg),
  );
  const recursive = has(o, "-R", "--recursive");
  const out = [effect("permissions", recursive ? "changes permissions recursively" : "changes permissions", targets, { recursive })];
  if (modeArg.split(",").some((m) => SETUID_MODE_RE.test(m)))
    out.push(effect("permissions", "sets the setuid or setgid bit", targets, { class: "privilege_escalation" }));
  if (/^([0-7]?[0-7]{2}[2367]|[ugoa]*o[+=]\w*w|a?\+\w*w)$/.test(modeArg) || /^0?777$/.test(modeArg))
    out.push(effect("permissions", "makes files world-writable", targets, { recursive }));
  return out;
};

export const chown: Handler = (c) => {
  const o = parseOptions(c.args, set("--reference", "--from"));
  const recursive = has(o, "-R", "--recursive");
  return [
    effect("permissions", recursive ? "changes ownership recursively" : "changes ownership", at(c, o.operands.slice(1)), { recursive }),
  ];
};

/** Commands that print or pack the files they are given. */
export const reader =
  (valued: ReadonlySet<string> = set(), skipFirst = false): Handler =>
  (c) => {
    const o = parseOptions(c.args, valued);
    return [effect("read", "reads files", at(c, skipFirst ? o.operands.slice(1) : o.operands))];
  };

/** jq, yq and friends: the first operand is the filter (`'.[] | .key'`), not a file, unless the filter comes from a file (`-f`). */
export const jsonQuery: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set("--arg", "--argjson", "--slurpfile", "--rawfile", "--indent", "-L", "--tab", "-I", "--output-format", "-o", "--input-format", "-p"),
  );
  const filterFromFile = c.args.some((a) => a === "-f" || a === "--from-file");
  // yq v4 names its mode first: `yq ea '.a' f.yaml`, `yq eval ...`.
  const ops = c.name === "yq" && /^(e|eval|ea|eval-all)$/.test(o.operands[0] ?? "") ? o.operands.slice(1) : o.operands;
  return [effect("read", "reads files", at(c, filterFromFile ? ops : ops.slice(1)))];
};

export const grep: Handler = (c) => {
  const o = parseOptions(
    c.args,
    set(
      "-e",
      "--regexp",
      "-f",
      "--file",
      "-m",
      "--max-count",
      "-A",
      "-B",
      "-C",
      "--include",
      "--exclude",
      "--exclude-dir",
      "-d",
      "-D",
      "--color",
      "--colour",
      "-g",
      "--glob",
      "-t",
      "--type",
    ),
  );
  const patterns = valuesOf(o, "-e", "--regexp");
  const pattern = patterns.length > 0 ? patterns.join("|") : (o.operands[0] ?? "");
  const files = at(c, patterns.length > 0 || valuesOf(o, "-f", "--file").length > 0 ? o.operands : o.operands.slice(1));
  const out = [effect("read", "reads files", files)];
  // A recursive search of the whole system or a home for passwords or keys harvests credentials.
  const wide = files.some((f) => f === "/" || /^\/(home|root|Users|etc)(\/[^/]+)?$/.test(f));
  if ((has(o, "-r", "-R", "--recursive") || c.name === "rg") && wide && /pass|secret|token|api.?key|credential|private/i.test(pattern))
    out.push(classified("secrets", "searches the system for credentials"));
  return out;
};

/**
 * The system places an archive unpacked into overwrites with whatever it holds: the root, `/etc`,
 * the distribution's program and library directories, `/boot` (not `/usr/local` or `/opt`, where
 * `tar -xzf node.tgz -C /usr/local` installs a toolchain).
 */
const SYSTEM_UNPACK_RE = /^\/(etc|boot|bin|sbin|lib|lib32|lib64|usr\/(s?bin|lib|lib32|lib64|libexec))?(\/|$)/;
const unpacksOverSystem = (dirs: readonly string[]): Effect[] =>
  dirs.some((d) => SYSTEM_UNPACK_RE.test(d))
    ? [classified("persistence", "unpacks an archive over the system's configuration or programs")]
    : none;

/**
 * unzip -d DIR, 7z x -oDIR: an archive unpacked over a system place. Called by the rules for every
 * command, not from the table: unzip stays out of it, so the files it names are still read as an
 * unknown program's are (named-files.ts: `unzip x.zip -d /etc/cron.d`), and 7z stays a reader.
 */
export const unpack: Handler = (c) => {
  if (!/^(unzip|7z|7za|7zr)$/.test(c.name)) return none;
  if (c.name === "7z" || c.name === "7za" || c.name === "7zr") {
    if (!/^[xe]$/.test(c.args[0] ?? "")) return none;
    const out = c.args.find((a) => a.startsWith("-o"));
    return unpacksOverSystem(at(c, [out === undefined ? "." : out.slice(2)]));
  }
  if (c.name === "unzip" && c.args.some((a) => /^-[lvtzZ]$/.test(a))) return none;
  const dir = c.args.findIndex((a) => a === "-d" || a === "--directory");
  return unpacksOverSystem(at(c, [dir >= 0 ? (c.args[dir + 1] ?? ".") : "."]));
};

export const tar: Handler = (c) => {
  const o = parseOptions(c.args, set("-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from"));
  const creates = has(o, "-c", "--create", "-r", "--append") || /^[a-z]*c/.test(c.args[0] ?? "");
  const extracts = has(o, "-x", "--extract", "--get") || /^[a-z]*x/.test(c.args[0] ?? "");
  // Unpacked into the last `-C` directory, else where tar runs.
  if (extracts && !creates) return unpacksOverSystem(at(c, [valuesOf(o, "-C", "--directory").at(-1) ?? "."]));
  if (!creates) return none;
  const files = at(
    c,
    o.operands.filter((a) => !/^[a-zA-Z]+$/.test(a) || a.includes(".")),
  );
  // `tar cf user@host:/x ...` writes the archive on another host (over --rsh-command).
  const remote = [...valuesOf(o, "-f", "--file"), c.args[1] ?? ""].some((f) => /^[^/]*@[^/:]+:/.test(f));
  return [
    effect("read", "archives files", files),
    ...(remote ? [effect("network", "writes an archive to a host", []), effect("upload", "sends files to a host", files)] : []),
  ];
};

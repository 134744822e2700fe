// A cheap shell-normalised view of any text (not only command fields): quotes and escapes
// dropped, operators spaced, command paths and rm's flags in one canonical spelling.
import { posix } from "node:path";
import { baseName } from "./command-names.js";
import { KNOWN_COMMANDS } from "./effects/command-table.js";

const DANGEROUS = new Set(KNOWN_COMMANDS);

/**
 * A command as the shell would see its words: quotes and backslashes removed, `$IFS` read
 * as a space, operators spaced out, `/bin/rm` read as `rm`, and rm's flags merged into one
 * canonical `-rf` (so `rm -r -f`, `rm -fr`, `rm --recursive --force` all read `rm -rf`).
 */
export function shellNormalise(s: string): string {
  const t = s
    .replace(/\$\{IFS[^}]*\}|\$IFS\b/g, " ")
    .replace(/\$(?=['"])/g, "")
    .replace(/\\(.)/gs, "$1")
    .replace(/['"]/g, "")
    .replace(/([`(){};|&<>])/g, " $1 ");
  const words = t.split(/\s+/).filter((w) => w !== "");
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string;
    const base = baseName(word);
    const w = base !== word && DANGEROUS.has(base) ? base : word;
    out.push(w);
    if (w === "rm") i = rmArguments(words, i + 1, out) - 1;
  }
  return out.join(" ");
}

/** rm's options from `from` merged into one canonical flag word, then its operands as paths; returns the index after them. */
function rmArguments(words: string[], from: number, out: string[]): number {
  const letters = new Set<string>();
  const longs: string[] = [];
  let j = from;
  for (; j < words.length; j++) {
    const opt = words[j] as string;
    if (opt === "--") {
      j++;
      break;
    }
    if (!opt.startsWith("-") || opt === "-") break;
    if (opt.startsWith("--")) {
      const letter = RM_LONG_OPTIONS[opt];
      if (letter !== undefined) letters.add(letter);
      else longs.push(opt);
    } else for (const c of opt.slice(1)) letters.add(c === "R" ? "r" : c);
  }
  if (letters.size > 0) {
    const rest = [...letters]
      .filter((c) => c !== "r" && c !== "f")
      .sort()
      .join("");
    out.push(`-${letters.has("r") ? "r" : ""}${letters.has("f") ? "f" : ""}${rest}`);
  }
  out.push(...longs);
  // rm's operands are paths: `//`, `/./`, `/tmp/..` all mean `/`.
  for (; j < words.length; j++) {
    const arg = words[j] as string;
    if (/^[;|&)`]$/.test(arg)) break;
    out.push(arg.startsWith("/") ? posix.normalize(arg) : arg);
  }
  return j;
}

const RM_LONG_OPTIONS: Readonly<Record<string, string>> = { "--recursive": "r", "--force": "f", "--dir": "d" };

// gavel's version, from its package.json (found by walking up from this module): the CLI
// prints it and the default image tags carry it.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

/** The version in gavel's package.json; "0.0.0-unknown" when none is found. */
export function gavelVersion(): string {
  cached ??= findVersion();
  return cached;
}

function findVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "gavel" && pkg.version !== undefined) return pkg.version;
    }
    const up = dirname(dir);
    if (up === dir) return "0.0.0-unknown";
    dir = up;
  }
}

// `gavel version`: prints the version of this build.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "./command.js";

/** Reads the version from gavel's package.json, found by walking up from this module. */
export function gavelVersion(): string {
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

export const versionCommand: Command = {
  name: "version",
  summary: "print gavel's version",
  usage: "gavel version",
  run(_argv, io) {
    io.stdout.write(`gavel ${gavelVersion()}\n`);
    return Promise.resolve(0);
  },
};

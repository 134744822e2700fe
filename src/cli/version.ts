// `gavel version`: prints the version of this build.
import { createRequire } from "node:module";
import type { Command } from "./command.js";

const require = createRequire(import.meta.url);

/** Reads the version from package.json (two levels up from src/cli or dist/cli). */
export function gavelVersion(): string {
  const pkg = require("../../package.json") as { version: string };
  return pkg.version;
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

// `gavel version`: prints the version of this build.
import { gavelVersion } from "../version.js";
import type { Command } from "./command.js";

export const versionCommand: Command = {
  name: "version",
  summary: "print gavel's version",
  usage: "gavel version",
  run(_argv, io) {
    io.stdout.write(`gavel ${gavelVersion()}\n`);
    return Promise.resolve(0);
  },
};

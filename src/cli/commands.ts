// The list of `gavel` subcommands. Each lives in its own file under src/cli/.
import type { Command } from "./command.js";
import { controllerCommand } from "./controller.js";
import { eventsCommand } from "./events.js";
import { guardCommand } from "./guard.js";
import { runCommand } from "./run.js";
import { validateCommand } from "./validate.js";
import { verdictCommand } from "./verdict.js";
import { versionCommand } from "./version.js";

/** Every subcommand, in the order `gavel help` lists them. */
export const commands: Command[] = [controllerCommand, eventsCommand, guardCommand, runCommand, validateCommand, verdictCommand, versionCommand];

// Structured logging with pino. The logger is built in the composition root and passed
// down; nothing in gavel logs through a module-level singleton.
import { pino, type Logger } from "pino";

export type { Logger };

/** Options for the root logger; read from flags or environment at the CLI's edge. */
export interface LoggerOptions {
  level?: string;
  name?: string;
  /** Where log lines go; stderr unless told, so stdout stays for command output. */
  destination?: NodeJS.WritableStream;
}

/** Creates the root logger. Fields whose names suggest secrets are redacted. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      name: options.name ?? "gavel",
      level: options.level ?? "info",
      redact: { paths: ["*.password", "*.token", "*.apiKey", "*.api_key", "*.secret"], censor: "[redacted]" },
    },
    (options.destination ?? process.stderr) as pino.DestinationStream,
  );
}

/** A logger that drops everything: the default where no logger is injected (tests, libraries). */
export const silentLogger: Logger = pino({ level: "silent" });

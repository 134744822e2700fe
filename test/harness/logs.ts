// A pino logger whose lines tests can read: each line is the JSON pino writes (message and fields).
import { createLogger, type Logger } from "../../src/telemetry/logger.js";

/** A logger at debug level that keeps its lines in `lines`, for assertions and failure messages. */
export function capturedLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = { write: (line: string) => lines.push(line.trimEnd()) } as unknown as NodeJS.WritableStream;
  return { logger: createLogger({ level: "debug", destination }), lines };
}

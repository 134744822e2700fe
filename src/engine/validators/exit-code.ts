// The exit_code validator: 1.0 when the worker's exit code is the expected one, else 0.0.
import type { ExitCodeValidatorSpec } from "../../api/types.js";
import { deterministic, type ValidatorOutcome } from "./outcome.js";

// Enough of stderr to tell the next iteration what broke without flooding its prompt.
const STDERR_TAIL_LINES = 20;
const STDERR_TAIL_CHARS = 2000;

function stderrTail(stderr: string): string {
  const lines = stderr.replace(/\s+$/, "").split(/\r?\n/);
  let tail = lines.slice(-STDERR_TAIL_LINES).join("\n");
  if (tail.length > STDERR_TAIL_CHARS) tail = tail.slice(-STDERR_TAIL_CHARS);
  return tail;
}

/** Checks the worker's exit code against `expected` (default 0); a mismatch quotes stderr's tail. */
export function validateExitCode(spec: ExitCodeValidatorSpec, exitCode: number, stderr = ""): ValidatorOutcome {
  const expected = spec.expected ?? 0;
  if (exitCode === expected) return deterministic(true, `exit code ${exitCode} as expected`);
  const tail = stderrTail(stderr);
  const reasoning = `exit code ${exitCode}, expected ${expected}` + (tail === "" ? "" : `; last lines of stderr:\n${tail}`);
  return deterministic(false, reasoning, [{ category: "exit_code", score: 0, message: `exit code ${exitCode}, expected ${expected}` }]);
}

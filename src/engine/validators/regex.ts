// The regex validator: stdout or a file's content searched with a linear-time RE2 pattern.
// Matching is a search (like Python's re.search); ^ and $ anchor the whole text unless the
// pattern turns on (?m); one trailing newline is dropped first, so "^...$" fits a one-line stdout.
import type { RegexValidatorSpec } from "../../api/types.js";
import { compilePattern } from "../re2.js";
import { deterministic, type FileContent, type ValidatorOutcome } from "./outcome.js";

/** Drops one trailing "\n" or "\r\n": a program's one-line output ends with one. */
export function trimTrailingNewline(text: string): string {
  if (text.endsWith("\r\n")) return text.slice(0, -2);
  if (text.endsWith("\n")) return text.slice(0, -1);
  return text;
}

/** The path the regex validator reads, or undefined when it matches stdout. */
export function regexTargetPath(spec: RegexValidatorSpec): string | undefined {
  const target = spec.target ?? "stdout";
  return target === "stdout" ? undefined : target;
}

/**
 * Searches stdout (or the target file's content, as read by the driver) for the pattern.
 * `streamsMerged`: why the driver's stdout holds stderr too; a failing match on stdout says so.
 */
export function validateRegex(spec: RegexValidatorSpec, subject: FileContent, streamsMerged?: string): ValidatorOutcome {
  const where = regexTargetPath(spec) ?? "stdout";
  const compiled = compilePattern(spec.pattern);
  if (!compiled.ok) return deterministic(false, compiled.error);
  if (!subject.ok) {
    return deterministic(false, subject.reason === "missing" ? `${where} does not exist` : `${where} could not be read: ${subject.detail}`);
  }
  const found = compiled.regex.matcher(trimTrailingNewline(subject.content)).find();
  if (found) return deterministic(true, `${where} matches /${spec.pattern}/`);
  const merged = where === "stdout" && streamsMerged !== undefined ? ` (${streamsMerged})` : "";
  const message = `${where} does not match /${spec.pattern}/${merged}`;
  return deterministic(false, message, [{ category: "regex", score: 0, message }]);
}

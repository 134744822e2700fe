// RE2 patterns for every part of gavel that matches one: the regex validator, the guard's
// patterns and policies, and manifest validation. Linear-time matching, one copy of re2js.
import { createRequire } from "node:module";
import type * as Re2js from "re2js";
import type { RE2JS } from "re2js";

const require = createRequire(import.meta.url);
let loaded: typeof Re2js | undefined;

/**
 * The re2js module, loaded at the first pattern compiled rather than with the modules that
 * may compile one: it is 300 KB of JavaScript, and most `gavel guard check` runs (the guard's
 * effect model decides, the built-in patterns compile on first use) never compile a pattern
 * (bench/cli-start.ts, ADR 0043). Its CommonJS build, so that the load can be synchronous;
 * every use in gavel goes through here, so there is one copy of its classes. The images'
 * dependency walk (src/agent/copy-deps.mjs) follows this require() as it follows imports.
 */
export function re2js(): typeof Re2js {
  loaded ??= require("re2js") as typeof Re2js;
  return loaded;
}

/** A compiled pattern, or why RE2 refuses it. */
export type CompiledPattern = { ok: true; regex: RE2JS } | { ok: false; error: string };

// Validators run the same few patterns every iteration; compiling RE2 programs is the costly part.
const CACHE_LIMIT = 256;
const compiledCache = new Map<string, CompiledPattern>();

/** Compiles a pattern with RE2 (cached); backreferences, lookaround and the like are clear errors. */
export function compilePattern(pattern: string): CompiledPattern {
  let compiled = compiledCache.get(pattern);
  if (compiled === undefined) {
    compiled = compileUncached(pattern);
    if (compiledCache.size >= CACHE_LIMIT) compiledCache.clear();
    compiledCache.set(pattern, compiled);
  }
  return compiled;
}

function compileUncached(pattern: string): CompiledPattern {
  const { RE2JS, RE2JSException, RE2JSSyntaxException } = re2js();
  try {
    return { ok: true, regex: RE2JS.compile(pattern) };
  } catch (err) {
    if (err instanceof RE2JSSyntaxException) {
      const description = String(err.getDescription());
      const at = String(err.getPattern() ?? "");
      return {
        ok: false,
        error: `regex pattern ${JSON.stringify(pattern)} is not supported by RE2 (linear-time matching): ${description}${at === "" ? "" : ` at ${JSON.stringify(at)}`}`,
      };
    }
    if (err instanceof RE2JSException) return { ok: false, error: `regex pattern ${JSON.stringify(pattern)} is invalid: ${err.message}` };
    throw err;
  }
}

/** For manifest validation (CLI and API): the error for a pattern RE2 refuses, or undefined. */
export function validateRegexPattern(pattern: string): string | undefined {
  const compiled = compilePattern(pattern);
  return compiled.ok ? undefined : compiled.error;
}

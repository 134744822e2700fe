// Types of gavel-plugin.mjs for the tests that load it (the plugin itself is plain JavaScript,
// loaded by eslint.config.mjs before anything is compiled).
import type { Linter } from "eslint";

/** Lines a hand-written source file may have. */
export declare const MAX_LINES: number;
export declare const MAX_LINES_ALLOWLIST: string;

/** The eslint config blocks of gavel's own rules for the repository at root. */
export declare function gavelRules(root: string): Linter.Config[];

// What a command does, as the effect model reads it: effects (the command table and the code
// reader produce them) and the threat classes the rules over them name (docs/guard.md).

import { GUARD_THREAT_CLASSES, type GuardThreatClass } from "../../../api/types.js";

/** The threat classes of the guard (API type): each a named class with an action under each profile (threat-policy.ts). */
export const THREAT_CLASSES = GUARD_THREAT_CLASSES;
export type ThreatClass = GuardThreatClass;

/** What one effect is about. */
export type EffectKind =
  /** Sends or receives over the network; targets: destinations. */
  | "network"
  /** Sends the content of files over the network; targets: the files. */
  | "upload"
  /** Saves downloaded content to files; targets: the files. */
  | "download"
  /** Runs code read from its stdin (a shell or interpreter fed by a pipe). */
  | "runs_stdin"
  /** Runs a file as a program or script; targets: the file. */
  | "runs_file"
  /** Runs the text of an argument as code (`eval`, `sh -c`, `python -c`). */
  | "runs_argument"
  /** Reads files; targets: the files. */
  | "read"
  /** Reads the process environment (which holds tokens). */
  | "environment"
  /** Deletes files or trees; targets: them. */
  | "delete"
  /** Overwrites or truncates files or devices; targets: them. */
  | "overwrite"
  /** Changes ownership or permissions; targets: them. */
  | "permissions"
  /** A shell: interactive or running code. */
  | "shell"
  /** Effects whose class does not depend on targets (the table names it). */
  | "classified";

/** One effect of one command. Targets are values: they decide rules and are never printed in a reason. */
export interface Effect {
  kind: EffectKind;
  /** A value-free phrase: "deletes recursively", "flushes the firewall". */
  what: string;
  targets: readonly string[];
  /** For "classified" effects: the class. */
  class?: ThreatClass;
  recursive?: boolean;
  /** An overwrite that only appends (`>>`, `tee -a`). */
  append?: boolean;
  /** A write of a file a program names in its arguments, content unknown (named-files.ts). */
  named?: boolean;
}

/** A rule's verdict on a call: the class, the effect that carried it and the argument key path (never the value). */
export interface Finding {
  class: ThreatClass;
  what: string;
  key: string;
  /** The classes of what a written payload would do (`persistence` carrying `reverse_shell`): denied if any of them is. */
  carries?: readonly ThreatClass[];
}

export const effect = (kind: EffectKind, what: string, targets: readonly string[] = [], extra: Partial<Effect> = {}): Effect => ({
  kind,
  what,
  targets,
  ...extra,
});
export const classified = (cls: ThreatClass, what: string): Effect => ({ kind: "classified", what, targets: [], class: cls });

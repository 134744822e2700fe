// What the shell reader hands the effect model (effects/): every simple command it read, after
// expansion, with where its input comes from and where its output goes.
import type { Token } from "./lexer.js";

/** A redirection of one command: its operator and expanded target (`> /dev/sda`). */
export interface Redirection {
  op: string;
  target: string;
}

/** One simple command as the reader saw it (one record per variant of its words, up to the reader's bound). */
export interface ShellCommand {
  /** Its bare name (`rm`, not `/bin/rm`). */
  name: string;
  /** The command word as expanded (`/tmp/x.sh`, `./install.sh`), before taking its base name. */
  word: string;
  /** Its arguments, expanded. */
  args: string[];
  redirs: Redirection[];
  /** The directory it runs in. */
  cwd: string;
  /** Its pipeline (an id shared by the commands of one pipeline) and its position in it. */
  pipe: number;
  pos: number;
  /** Its stdin is a here-document or here-string. */
  hereInput: boolean;
  /** Its stdin when static (a here-document, a here-string, a pipe from echo): what `tee` or `crontab -` writes. */
  input?: string;
  /** Its output when static (`echo`, `printf`, `cat <<EOF`): what a redirection writes. */
  output?: string;
  /** Index (in the log) of the command whose word holds this command's `$(...)`, if any. */
  parent?: number;
  /** The command that runs it as another user (`sudo`, `doas`, `pkexec`, `runuser`, `setpriv`), when one does, also around the line that runs it. */
  asUser?: string;
  /** Nesting: 0 for the line itself, more inside `sh -c`, `eval`, a here-document read by a shell, `xargs`, `find -exec`. */
  depth: number;
}

/** The commands read from one line, in reading order (a substitution's commands before the command that holds it). */
export interface CommandLog {
  commands: ShellCommand[];
  /** The next pipeline id. */
  pipes: number;
  /** Names made to stand for other commands earlier in the line: `alias x='rm -rf'`, `cp /bin/rm /tmp/x`. */
  aliases: Map<string, string[]>;
  /** Shell functions defined earlier in the line, by name: their bodies, read again at each call (functions.ts). */
  functions: Map<string, Token[]>;
  /** The functions whose call is being read: a call of one of them again (recursion, a fork bomb) is read as a plain command. */
  calling: Set<string>;
}

export const newCommandLog = (): CommandLog => ({ commands: [], pipes: 0, aliases: new Map(), functions: new Map(), calling: new Set() });

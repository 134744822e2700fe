// Command-line options as most Unix commands parse them: `-abc` clusters, `-o VALUE`,
// `--name=VALUE`, `--name VALUE` for options that take one, `--` ends them.

/** A command's arguments split into options and operands. */
export interface Options {
  /** `-r`, `--force`, ... as given (each letter of a cluster on its own). */
  flags: Set<string>;
  /** Values of options that take one, by option. */
  values: Map<string, string[]>;
  operands: string[];
}

const NONE: ReadonlySet<string> = new Set();

/** Splits args; `valued` names the options that take a value (`-o`, `--output`). */
export function parseOptions(args: readonly string[], valued: ReadonlySet<string> = NONE): Options {
  const o: Options = { flags: new Set(), values: new Map(), operands: [] };
  const put = (name: string, v: string): void => {
    const list = o.values.get(name);
    if (list === undefined) o.values.set(name, [v]);
    else list.push(v);
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--") {
      o.operands.push(...args.slice(i + 1));
      break;
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const name = eq < 0 ? a : a.slice(0, eq);
      o.flags.add(name);
      if (eq >= 0) put(name, a.slice(eq + 1));
      else if (valued.has(name) && i + 1 < args.length) put(name, args[++i] as string);
      continue;
    }
    if (a.startsWith("-") && a.length > 1) {
      for (let j = 1; j < a.length; j++) {
        const name = `-${a[j] as string}`;
        o.flags.add(name);
        if (valued.has(name)) {
          const rest = a.slice(j + 1);
          if (rest !== "") put(name, rest);
          else if (i + 1 < args.length) put(name, args[++i] as string);
          break;
        }
      }
      continue;
    }
    o.operands.push(a);
  }
  return o;
}

/** Whether any of the given options is set. */
export const has = (o: Options, ...names: string[]): boolean => names.some((n) => o.flags.has(n));
/** All values of the given options. */
export const valuesOf = (o: Options, ...names: string[]): string[] => names.flatMap((n) => o.values.get(n) ?? []);

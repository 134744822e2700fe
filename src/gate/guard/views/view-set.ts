// The texts viewed for one call, deduplicated in the order they were found, and where `~`
// and relative paths point while they are viewed.

/** The views of one call being collected. */
export interface ViewSet {
  home: string;
  cwd: string;
  seen: Seen;
  out: string[];
  /** charFlags of the line walk() last returned, so a joined line is not scanned again. */
  lineFlags: number;
}

/**
 * Texts already viewed: a linear scan while they are few (most calls; no hash table to
 * allocate and grow), a Set once there are more.
 */
export class Seen {
  private readonly list: string[] = [];
  private set: Set<string> | undefined;

  has(s: string): boolean {
    if (this.set !== undefined) return this.set.has(s);
    for (const x of this.list) if (x === s) return true;
    return false;
  }

  add(s: string): void {
    if (this.set !== undefined) this.set.add(s);
    else if (this.list.push(s) > 48) this.set = new Set(this.list);
  }
}

/** Adds a text to the views unless it is there already. */
export function add(s: string, ctx: ViewSet): void {
  if (ctx.seen.has(s)) return;
  ctx.seen.add(s);
  ctx.out.push(s);
}

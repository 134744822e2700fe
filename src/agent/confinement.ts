// Keeps the built-in fs and cmd tools inside the worker's mounted volumes: paths are
// resolved lexically (no `..` escape) and then by realpath (no symlink escape).
import { lstat, mkdir, realpath } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

/** A volume the worker may touch, at its mount path. */
export interface Mount {
  path: string;
  readOnly: boolean;
}

/** A path the model asked for that lies outside every mount (or in a read-only one for writing). */
export class ConfinementError extends Error {
  override readonly name = "ConfinementError";
}

function within(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The confinement of one worker: its mounts, resolved once to their real paths. */
export class Confinement {
  private constructor(private readonly mounts: (Mount & { real: string })[]) {}

  /** Resolves each mount's real path; a mount that does not exist is an error naming it. */
  static async of(mounts: Mount[]): Promise<Confinement> {
    const resolved = [];
    for (const m of mounts) {
      if (!isAbsolute(m.path)) throw new ConfinementError(`mount path "${m.path}" is not absolute`);
      try {
        resolved.push({ ...m, path: resolve(m.path), real: await realpath(m.path) });
      } catch (err) {
        throw new ConfinementError(`mount path "${m.path}" does not exist`, { cause: err });
      }
    }
    return new Confinement(resolved);
  }

  /** The first mount's path: where relative paths and commands start. */
  get home(): string | undefined {
    return this.mounts[0]?.path;
  }

  // The mount a path belongs to by its real location.
  private mountOfReal(real: string): (Mount & { real: string }) | undefined {
    // The longest (most specific) root wins when mounts nest.
    return [...this.mounts].sort((a, b) => b.real.length - a.real.length).find((m) => within(m.real, real));
  }

  private lexical(requested: string): string {
    if (typeof requested !== "string" || requested === "") throw new ConfinementError("path is empty");
    if (requested.includes("\0")) throw new ConfinementError("path contains a NUL byte");
    const home = this.home;
    if (home === undefined) throw new ConfinementError("no volumes are mounted: file tools have nothing to work on");
    const abs = isAbsolute(requested) ? resolve(requested) : resolve(home, requested);
    if (!this.mounts.some((m) => within(m.path, abs) || within(m.real, abs))) {
      throw new ConfinementError(`path "${requested}" is outside the mounted volumes (${this.mounts.map((m) => m.path).join(", ")})`);
    }
    return abs;
  }

  /** The real path of an existing file or directory inside the mounts, for reading. */
  async forRead(requested: string): Promise<string> {
    const abs = this.lexical(requested);
    let real: string;
    try {
      real = await realpath(abs);
    } catch (err) {
      throw new ConfinementError(`path "${requested}" does not exist`, { cause: err });
    }
    if (this.mountOfReal(real) === undefined) {
      throw new ConfinementError(`path "${requested}" resolves to "${real}", outside the mounted volumes`);
    }
    return real;
  }

  /**
   * The real path to write `requested` at, inside a writable mount. Missing parent
   * directories are created after their nearest existing ancestor has been checked.
   */
  async forWrite(requested: string): Promise<string> {
    const abs = this.lexical(requested);
    // Walk up to the nearest ancestor that exists and check where it really is.
    let existing = abs;
    const missing: string[] = [];
    for (;;) {
      try {
        await lstat(existing);
        break;
      } catch {
        missing.unshift(existing);
        const up = dirname(existing);
        if (up === existing) throw new ConfinementError(`no existing ancestor of "${requested}"`);
        existing = up;
      }
    }
    const realExisting = await realpath(existing);
    const target = missing.length === 0 ? realExisting : resolve(realExisting, relative(existing, abs));
    const mount = this.mountOfReal(target);
    if (mount === undefined || this.mountOfReal(realExisting) === undefined) {
      throw new ConfinementError(`path "${requested}" resolves to "${target}", outside the mounted volumes`);
    }
    if (mount.readOnly) throw new ConfinementError(`path "${requested}" is on the read-only volume ${mount.path}`);
    if (missing.length > 1) await mkdir(dirname(target), { recursive: true });
    return target;
  }
}

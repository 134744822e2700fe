// Holds the compiled policy of every namespace and swaps them all at once when GuardPolicy
// objects change (hot reload): a call in flight keeps the snapshot it started with.
import { DEFAULT_GUARD_POLICY } from "../../api/types.js";
import { compilePolicy, precompileBuiltinPatterns, type CompiledPolicy, type NamedPolicy } from "./policy.js";

interface Snapshot {
  version: number;
  /** Whether a cluster default policy exists (it applies in every namespace). */
  hasDefault: boolean;
  defaults: CompiledPolicy;
  byNamespace: ReadonlyMap<string, CompiledPolicy>;
}

/** The current guard policies; `update` replaces them atomically or not at all. */
export class PolicyStore {
  private snapshot: Snapshot;

  /** `controllerNamespace` is where the cluster default policy (`default`) lives. */
  constructor(
    private readonly controllerNamespace = "gavel-system",
    initial: readonly NamedPolicy[] = [],
  ) {
    // A gate serves calls for hours: the built-in patterns compile here, not at a call.
    precompileBuiltinPatterns();
    this.snapshot = this.build(initial, 1);
  }

  /** The version of the current snapshot; it grows by one with each successful update. */
  get version(): number {
    return this.snapshot.version;
  }

  /**
   * Replaces every policy with `policies` (the full current set, as a watch cache lists it).
   * Every namespace's merge is compiled before the swap; on a PolicyError the old policies stay.
   */
  update(policies: readonly NamedPolicy[]): void {
    this.snapshot = this.build(policies, this.snapshot.version + 1);
  }

  /** The compiled policy for a namespace: the cluster default merged with that namespace's policies. */
  get(namespace: string): CompiledPolicy {
    const s = this.snapshot;
    return s.byNamespace.get(namespace) ?? s.defaults;
  }

  /** True when a GuardPolicy applies in the namespace: its own, or the cluster default. */
  hasPolicies(namespace: string): boolean {
    return this.snapshot.hasDefault || this.snapshot.byNamespace.has(namespace);
  }

  private build(policies: readonly NamedPolicy[], version: number): Snapshot {
    const isDefault = (p: NamedPolicy): boolean =>
      p.name === DEFAULT_GUARD_POLICY && (p.namespace === undefined || p.namespace === this.controllerNamespace);
    const defaults = policies.filter(isDefault);
    const perNamespace = new Map<string, NamedPolicy[]>();
    for (const p of policies) {
      if (isDefault(p) || p.namespace === undefined) continue;
      const list = perNamespace.get(p.namespace) ?? [];
      list.push(p);
      perNamespace.set(p.namespace, list);
    }
    const byNamespace = new Map<string, CompiledPolicy>();
    for (const [ns, list] of perNamespace) {
      list.sort((a, b) => a.name.localeCompare(b.name));
      byNamespace.set(ns, compilePolicy([...defaults, ...list]));
    }
    return { version, hasDefault: defaults.length > 0, defaults: compilePolicy(defaults), byNamespace };
  }
}

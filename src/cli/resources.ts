// The resource names `gavel get` and `gavel describe` accept, with kubectl's aliases (the
// CRDs' plural, singular and short names), mapped to what the API serves.
import { RESOURCES, type Resource } from "../views/resources.js";
import { UsageError } from "./command.js";

/** The resource a user named (kubectl's `kind.group` form accepted too); a UsageError naming it otherwise. */
export function resolveResource(name: string): Resource {
  const bare = name.toLowerCase().replace(/\.100monkeys\.ai(\/v1)?$/, "");
  const r = RESOURCES.find((x) => x.names.includes(bare));
  if (r === undefined) {
    throw new UsageError(
      `unknown resource type "${name}"; gavel knows ${RESOURCES.map((x) => `${x.plural} (${x.names.slice(1).join(", ")})`).join(", ")}`,
    );
  }
  return r;
}

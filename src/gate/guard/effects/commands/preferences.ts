// macOS's preferences written through `defaults` (issue 27, fifth round, from the fourth held-out
// part): `defaults write DOMAIN KEY VALUE` writes DOMAIN's property list, so it is read as the
// write of that file and the rules over targets decide what it means, as they do for a file
// under /etc: /Library/Preferences is the system's configuration (persistence: a login hook is
// one of its keys), and the domains of Gatekeeper, the firewall and the quarantine are a
// protection's configuration (protection_off). A domain given by name only is the user's own
// (`~/Library/Preferences`), as a dotfile is, and is left to the worker.
import { effect } from "../effect.js";
import { at, none, type Handler } from "./handler.js";

const WRITES = /^(write|delete|import|rename)$/;

/** `defaults [-currentHost|-host H] write|delete|import|rename DOMAIN ...`: an overwrite of the domain's plist when it is a path. */
export const defaults: Handler = (c) => {
  const ops = c.args.filter((a, i) => !a.startsWith("-") && c.args[i - 1] !== "-host");
  const domain = ops[1] ?? "";
  if (!WRITES.test(ops[0] ?? "") || !domain.startsWith("/")) return none;
  return [effect("overwrite", "writes preferences", at(c, [domain.endsWith(".plist") ? domain : `${domain}.plist`]))];
};

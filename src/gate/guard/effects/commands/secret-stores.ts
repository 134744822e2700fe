// Secret stores read through their own programs (issue 27, fifth round, from the fourth held-out
// part's keychain dumps): a store's file is a secret file (targets.ts), but its program reads
// the store without naming the file — macOS's `security dump-keychain` and `find-generic-password
// -w`, and the same act on Linux: the Secret Service's `secret-tool lookup`, `pass show`,
// KWallet's `kwallet-query -r`, `gpg --export-secret-keys`. The effect is a read of the store,
// whatever names it.
import { classified } from "../effect.js";
import { none, type Handler } from "./handler.js";

const READS_STORE = "reads the entries of a secret store (keychain, keyring, password store)";

/** What each store program does when it prints the secrets it holds. */
export const secretStore: Handler = (c) => {
  const ops = c.args.filter((a) => !a.startsWith("-"));
  const verb = ops[0] ?? "";
  const reads =
    // `security find-*-password` prints only metadata without -w/-g; dump-keychain prints the items, -d their secrets too.
    (c.name === "security" &&
      (/^(dump-keychain|export)$/.test(verb) ||
        (/^find-(generic|internet)-password$/.test(verb) && c.args.some((a) => /^-[a-z]*[wg]/.test(a))))) ||
    (c.name === "secret-tool" && /^(lookup|search)$/.test(verb)) ||
    // `pass NAME` is `pass show NAME`; `pass` alone, `ls`, `find`, `grep` list names or search.
    (c.name === "pass" &&
      ops.length > 0 &&
      !/^(ls|list|find|search|init|insert|add|generate|edit|rm|remove|delete|mv|rename|cp|copy|git|help|version|otp)$/.test(verb)) ||
    (c.name === "kwallet-query" && c.args.some((a) => /^(-r|--read-password)$/.test(a))) ||
    (c.name === "gpg" && c.args.some((a) => /^--export-secret-(sub)?keys$/.test(a)));
  return reads ? [classified("secrets", READS_STORE)] : none;
};

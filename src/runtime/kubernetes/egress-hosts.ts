// An allowlist (security.network.allowlist) as NetworkPolicy ipBlocks: IPs and CIDRs as they
// are, host names resolved by the controller's resolver at pod creation. A name's addresses
// may change later; the policy keeps the ones the pod started with (its run is short).
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { TerminalError, messageOf } from "../../errors.js";

/** Resolves a host name to its addresses (injectable for tests). */
export type HostResolver = (host: string) => Promise<string[]>;

/** The controller's own resolver (the node's or the pod's DNS). */
export const systemResolver: HostResolver = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

/** The CIDR of one address: /32 for IPv4, /128 for IPv6. */
export function cidrOf(ip: string): string {
  return isIP(ip) === 6 ? `${ip}/128` : `${ip}/32`;
}

/** The ipBlock CIDRs of an allowlist; a host that cannot be resolved is a TerminalError naming it. */
export async function egressCidrs(hosts: readonly string[], resolve: HostResolver = systemResolver): Promise<string[]> {
  const out = new Set<string>();
  for (const [i, raw] of hosts.entries()) {
    const host = raw
      .trim()
      .replace(/^[a-z]+:\/\//i, "")
      .replace(/[:/].*$/, (rest) => (/^\/\d+$/.test(rest) ? rest : ""));
    const [addr, bits] = host.split("/");
    if (addr !== undefined && isIP(addr) !== 0) {
      out.add(bits !== undefined ? `${addr}/${bits}` : cidrOf(addr));
      continue;
    }
    let ips: string[];
    try {
      ips = await resolve(host);
    } catch (err) {
      throw new TerminalError("UnresolvableHost", `security.network.allowlist[${i}]: host "${raw}" cannot be resolved: ${messageOf(err)}`);
    }
    if (ips.length === 0) throw new TerminalError("UnresolvableHost", `security.network.allowlist[${i}]: host "${raw}" has no address`);
    for (const ip of ips) out.add(cidrOf(ip));
  }
  return [...out];
}

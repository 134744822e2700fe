// The cluster's route configuration: one password for every server of one operator, another
// for another operator, and route URLs that carry it; bad routes named.
import { describe, expect, it } from "vitest";
import { createTrust } from "./credentials.js";
import { clusterRoutesConfig, routePassword } from "./cluster-routes.js";

describe("cluster routes", () => {
  it("derives one password per operator seed, never the seed itself", () => {
    const a = createTrust();
    const b = createTrust();
    expect(routePassword(a.operatorSeed)).toBe(routePassword(a.operatorSeed));
    expect(routePassword(a.operatorSeed)).not.toBe(routePassword(b.operatorSeed));
    expect(routePassword(a.operatorSeed)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(routePassword(a.operatorSeed)).not.toContain(a.operatorSeed.slice(0, 10));
  });

  it("writes the authorization and every route with its credentials", () => {
    const conf = clusterRoutesConfig("pw_1-x", ["nats://n-0.n-headless.ns.svc:6222", "nats://n-1.n-headless.ns.svc:6222"]);
    expect(conf).toBe(
      [
        'authorization { user: "gavel-routes", password: "pw_1-x" }',
        "routes: [",
        '  "nats://gavel-routes:pw_1-x@n-0.n-headless.ns.svc:6222"',
        '  "nats://gavel-routes:pw_1-x@n-1.n-headless.ns.svc:6222"',
        "]",
      ].join("\n"),
    );
  });

  it("names a route that is not nats://HOST:PORT, and refuses none", () => {
    expect(() => clusterRoutesConfig("p", ["n-0:6222"])).toThrow('--route "n-0:6222": must be nats://HOST:PORT without credentials');
    expect(() => clusterRoutesConfig("p", ["nats://u:p@n-0:6222"])).toThrow("without credentials");
    expect(() => clusterRoutesConfig("p", ["nats://n-0"])).toThrow('--route "nats://n-0"');
    expect(() => clusterRoutesConfig("p", [])).toThrow("a cluster needs its route URLs");
  });
});

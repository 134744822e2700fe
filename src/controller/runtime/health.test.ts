import { request } from "node:http";
import * as k8s from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { kubeOf } from "../../views/kube.js";
import { controllerWebView } from "../../webui/server.js";
import { EndpointServer, parseBindAddress, probeResponse, probeRoutes, type Check } from "./health.js";

const checks = (nats?: string): Check[] => [
  { name: "informers", check: () => undefined },
  { name: "nats", check: () => nats },
];
const q = (s = "") => new URLSearchParams(s);

describe("probeResponse (kube-apiserver's /readyz answers)", () => {
  it("ok when every check passes; ?verbose lists them", () => {
    expect(probeResponse("readyz", checks(), "/readyz", q())).toEqual({ status: 200, body: "ok\n" });
    expect(probeResponse("readyz", checks(), "/readyz", q("verbose"))).toEqual({
      status: 200,
      body: "[+]informers ok\n[+]nats ok\nreadyz check passed\n",
    });
  });

  it("500 naming the failing check and why; ?exclude leaves one out; /readyz/NAME asks one", () => {
    const down = checks("the tool-call gate lost NATS at nats://x:4222 and is reconnecting");
    expect(probeResponse("readyz", down, "/readyz", q())).toEqual({
      status: 500,
      body: "[+]informers ok\n[-]nats failed: the tool-call gate lost NATS at nats://x:4222 and is reconnecting\nreadyz check failed\n",
    });
    expect(probeResponse("readyz", down, "/readyz", q("exclude=nats")).status).toBe(200);
    expect(probeResponse("readyz", down, "/readyz/nats", q())).toEqual({
      status: 500,
      body: "internal server error: the tool-call gate lost NATS at nats://x:4222 and is reconnecting\n",
    });
    expect(probeResponse("readyz", down, "/readyz/informers", q())).toEqual({ status: 200, body: "ok\n" });
    expect(probeResponse("readyz", down, "/readyz/etcd", q())).toEqual({
      status: 404,
      body: "no readyz check named etcd; checks: informers, nats\n",
    });
  });

  it("a check that throws fails with the error", () => {
    const r = probeResponse(
      "healthz",
      [
        {
          name: "x",
          check: () => {
            throw new Error("boom");
          },
        },
      ],
      "/healthz",
      q(),
    );
    expect(r).toEqual({ status: 500, body: "[-]x failed: the check threw: boom\nhealthz check failed\n" });
  });
});

describe("parseBindAddress (controller-runtime's bind address flags)", () => {
  it("takes :PORT, HOST:PORT and [IPv6]:PORT; 0 and empty turn the endpoint off", () => {
    expect(parseBindAddress("--f", ":8081")).toEqual({ port: 8081 });
    expect(parseBindAddress("--f", "127.0.0.1:0")).toEqual({ host: "127.0.0.1", port: 0 });
    expect(parseBindAddress("--f", "[::1]:9090")).toEqual({ host: "::1", port: 9090 });
    expect(parseBindAddress("--f", "0")).toBeUndefined();
    expect(parseBindAddress("--f", "")).toBeUndefined();
  });

  it("refuses anything else naming the flag", () => {
    for (const bad of ["8081", "host", ":99999", "a:b"])
      expect(() => parseBindAddress("--health-probe-bind-address", bad)).toThrow(`--health-probe-bind-address: "${bad}" is not HOST:PORT`);
  });
});

describe("EndpointServer", () => {
  it("answers probes over HTTP: 200/500 with the body, 404 elsewhere, 405 for other methods", async () => {
    let why: string | undefined;
    const server = await EndpointServer.listen(
      { host: "127.0.0.1", port: 0 },
      probeRoutes("readyz", () => [{ name: "nats", check: () => why }]),
    );
    try {
      const url = `http://127.0.0.1:${server.address.port}`;
      const ok = await fetch(`${url}/readyz`);
      expect([ok.status, await ok.text(), ok.headers.get("content-type")]).toEqual([200, "ok\n", "text/plain; charset=utf-8"]);
      why = "down";
      const bad = await fetch(`${url}/readyz?verbose`);
      expect([bad.status, await bad.text()]).toEqual([500, "[-]nats failed: down\nreadyz check failed\n"]);
      const one = await fetch(`${url}/readyz/nats`);
      expect(one.status).toBe(500);
      const missing = await fetch(`${url}/metrics`);
      expect([missing.status, await missing.text()]).toEqual([404, "not found: /metrics; try /readyz\n"]);
      expect((await fetch(`${url}/readyz`, { method: "POST" })).status).toBe(405);
    } finally {
      await server.close();
    }
  });

  it("with the web view mounted: /ui/ is the view's (its script, its redirect, its Host check), everything else the routes'", async () => {
    const kc = new k8s.KubeConfig();
    // An API server nobody listens on: the requests below never reach it.
    kc.loadFromOptions({
      clusters: [{ name: "c", server: "https://127.0.0.1:9" }],
      users: [{ name: "u" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    const server = await EndpointServer.listen(
      { host: "127.0.0.1", port: 0 },
      probeRoutes("readyz", () => []),
      controllerWebView(kubeOf(kc, "team")),
    );
    try {
      const url = `http://127.0.0.1:${server.address.port}`;
      const js = await fetch(`${url}/ui/assets/ui.js`);
      expect([js.status, js.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
      expect(await js.text()).toContain("EventSource");
      const bare = await fetch(`${url}/ui`, { redirect: "manual" });
      expect([bare.status, bare.headers.get("location")]).toEqual([308, "/ui/"]);
      const root = await fetch(`${url}/ui/`, { redirect: "manual" });
      expect([root.status, root.headers.get("location")]).toEqual([302, "/ui/namespaces/team/executions"]);
      expect((await fetch(`${url}/ui/`, { method: "DELETE" })).status).toBe(405);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      expect((await fetch(`${url}/elsewhere`)).status).toBe(404);
      const foreign = await new Promise<number>((resolve, reject) => {
        request({ host: "127.0.0.1", port: server.address.port, path: "/ui/", headers: { host: "evil.example" } }, (res) =>
          resolve(res.statusCode ?? 0),
        )
          .on("error", reject)
          .end();
      });
      expect(foreign).toBe(403);
    } finally {
      await server.close();
    }
  });
});

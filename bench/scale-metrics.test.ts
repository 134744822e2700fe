// The scale bench's reading of apiserver_request_total: differences by verb and resource, and
// which of them are gavel's writes.
import { describe, expect, it } from "vitest";
import { gavelWrites, perExecution, requestsBetween } from "./scale-metrics.js";

const scrape = (rows: [string, string, string, string, number][]) =>
  [
    "# HELP apiserver_request_total Counter of apiserver requests",
    "# TYPE apiserver_request_total counter",
    ...rows.map(
      ([verb, group, resource, subresource, v]) =>
        `apiserver_request_total{code="201",component="apiserver",dry_run="",group="${group}",resource="${resource}",scope="resource",subresource="${subresource}",verb="${verb}",version="v1"} ${v}`,
    ),
  ].join("\n");

describe("requestsBetween", () => {
  it("counts what changed by verb and resource, most first, codes summed", () => {
    const before = scrape([
      ["POST", "", "pods", "", 2],
      ["GET", "", "pods", "log", 0],
    ]);
    const after = [
      scrape([
        ["POST", "", "pods", "", 12],
        ["GET", "", "pods", "log", 10],
        ["PUT", "100monkeys.ai", "executions", "status", 30],
      ]),
      'apiserver_request_total{code="409",group="100monkeys.ai",resource="executions",subresource="status",verb="PUT"} 5',
    ].join("\n");
    expect(requestsBetween(before, after)).toEqual([
      { verb: "PUT", resource: "100monkeys.ai/executions/status", count: 35 },
      { verb: "GET", resource: "/pods/log", count: 10 },
      { verb: "POST", resource: "/pods", count: 10 },
    ]);
  });
});

describe("gavelWrites", () => {
  it("leaves out reads, the scheduler's and kwok's writes, and the harness's own creates", () => {
    const kinds = [
      { verb: "POST", resource: "100monkeys.ai/executions", count: 200 },
      { verb: "POST", resource: "/pods/binding", count: 200 },
      { verb: "PATCH", resource: "/pods/status", count: 400 },
      { verb: "POST", resource: "events.k8s.io/events", count: 200 },
      { verb: "PATCH", resource: "/nodes/status", count: 3 },
      { verb: "POST", resource: "/events", count: 900 },
      { verb: "LIST", resource: "/pods", count: 2 },
      { verb: "POST", resource: "/namespaces", count: 100 },
    ];
    const gavel = gavelWrites(kinds, { "POST 100monkeys.ai/executions": 100, "POST /namespaces": 100 });
    expect(gavel).toEqual([
      { verb: "POST", resource: "100monkeys.ai/executions", count: 100 },
      { verb: "POST", resource: "/events", count: 900 },
    ]);
    expect(perExecution(gavel, 100)).toEqual(["POST 100monkeys.ai/executions 1.0", "POST /events 9.0"]);
  });
});

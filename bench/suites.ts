// Every benchmark suite `make bench` runs, in order. Add a suite here when you add one.
import type { BenchSuite } from "./types.js";
import { suite as gradient } from "./gradient.js";
import { suite as engine } from "./engine.js";
import { suite as judgeOverhead } from "./judge-overhead.js";
import { suite as gate } from "./gate.js";
import { suite as guard } from "./guard.js";
import { suite as cliStart } from "./cli-start.js";
import { suite as gateCluster } from "./gate-cluster.js";
import { suite as tracing } from "./tracing.js";
import { clusterSuite as reconcileTracingCluster, suite as reconcileTracing } from "./reconcile-tracing.js";
import { suite as judgeCluster } from "./judge-cluster.js";
import { suite as mcpEndpoint } from "./mcp-endpoint.js";
import { suite as scale } from "./scale.js";
import { suite as natsSync } from "./nats-sync.js";

export const suites: BenchSuite[] = [
  gradient,
  engine,
  judgeOverhead,
  gate,
  natsSync,
  mcpEndpoint,
  tracing,
  reconcileTracing,
  guard,
  cliStart,
  gateCluster,
  judgeCluster,
  reconcileTracingCluster,
  scale,
];

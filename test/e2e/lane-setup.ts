// Setup file of the exclusive e2e files, after take-file-slot.ts gave the file its lane: the
// lane's chart release (gavel-lane-N in its namespace, reconciling only its lane's namespaces,
// ADR 0081) installed or brought to the fixture's values, as the global setup does for the
// shared release. The first file of a lane installs it; the next ones find it.
const { useCluster } = await import("../harness/cluster.js");
const { installChart } = await import("../harness/gavel-chart.js");
await installChart(await useCluster());

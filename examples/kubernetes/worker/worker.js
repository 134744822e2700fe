// The example worker of examples/kubernetes: like examples/refine-once it writes sum.js (with
// a bug on the first attempt, fixed once the judges' feedback names it), its tests and a
// report. The Execution's spec.input tunes it: {"sleep_seconds": N} waits first (to watch a
// run, or stop it), {"exit_code": N} exits with N, {"output_bytes": N} prints N bytes of
// filler (64-byte lines with multi-byte characters) before its report, for tests of large
// outputs reaching the judges. Each run appends a line to runs.log.
const fs = require("node:fs");
const path = require("node:path");

const workspace = (process.env.GAVEL_WORKSPACE || "/workspace").split(":")[0];
const iteration = Number(process.env.GAVEL_ITERATION || "1");
const feedback = process.env.GAVEL_FEEDBACK || "";
let input = {};
try {
  input = JSON.parse(process.env.GAVEL_INPUT || "null") || {};
} catch {
  console.error("GAVEL_INPUT is not JSON; running with defaults");
}
const fixing = /sum|assert|expected|fail/i.test(feedback);

fs.appendFileSync(path.join(workspace, "runs.log"), `iteration ${iteration} ${new Date().toISOString()}\n`);
const sleepMs = Math.max(0, Number(input.sleep_seconds || 0)) * 1000;

setTimeout(() => {
  const body = fixing || input.correct_first_time ? "return a + b;" : "return a - b; // first attempt: wrong operator";
  fs.writeFileSync(path.join(workspace, "sum.js"), `module.exports = function sum(a, b) {\n  ${body}\n};\n`);
  fs.writeFileSync(
    path.join(workspace, "sum.test.js"),
    [
      'const test = require("node:test");',
      'const assert = require("node:assert");',
      'const sum = require("./sum.js");',
      'test("adds two numbers", () => assert.strictEqual(sum(2, 3), 5));',
      'test("zero is neutral", () => assert.strictEqual(sum(0, 0), 0));',
      "",
    ].join("\n"),
  );
  const report = { status: "success", iteration, files: ["sum.js", "sum.test.js"], used_feedback: fixing };
  fs.writeFileSync(path.join(workspace, "report.json"), JSON.stringify(report, null, 2));
  if (feedback !== "") console.log(`iteration ${iteration}: read feedback (${feedback.split("\n")[0]}); fixing sum.js`);
  const filler = Math.max(0, Math.floor(Number(input.output_bytes || 0) / 64));
  if (filler > 0) process.stdout.write(`é→${"x".repeat(58)}\n`.repeat(filler));
  console.log(JSON.stringify(report));
  process.exitCode = Number.isInteger(input.exit_code) ? input.exit_code : 0;
}, sleepMs);

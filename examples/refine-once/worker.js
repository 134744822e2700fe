// The example worker: writes a small module, its tests and a report into /workspace.
// The first attempt has a bug; given feedback (GAVEL_FEEDBACK) it reads it and fixes the bug,
// as a model would. No model is involved, so the demo runs anywhere.
const fs = require("node:fs");
const path = require("node:path");

const workspace = (process.env.GAVEL_WORKSPACE || "/workspace").split(":")[0];
const iteration = Number(process.env.GAVEL_ITERATION || "1");
const feedback = process.env.GAVEL_FEEDBACK || "";
const fixing = /sum|assert|expected|fail/i.test(feedback);

const body = fixing ? "return a + b;" : "return a - b; // first attempt: wrong operator";
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
console.log(JSON.stringify(report));

// Prints vitest's JSON results as the plain line "<label>: N passed, N failed", and
// after it every failed test (and every file that failed outside a test) with the
// head of its message, so the last lines of a CI log say what failed.
import { existsSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);
const total = args.includes("--total");
const files = total ? args.filter((a) => a !== "--total") : [args[0]];
let passed = 0;
let failed = 0;
let skipped = 0;
const failures = [];
const head = (text) =>
  String(text ?? "")
    .replace(/\u001b\[[0-9;]*m/g, "")
    .split("\n")
    .slice(0, 6)
    .map((l) => `      ${l.slice(0, 300)}`)
    .join("\n");
for (const f of files) {
  if (!existsSync(f)) {
    failed += 1;
    failures.push(`  ${f}: no results (the run did not finish)`);
    continue;
  }
  const r = JSON.parse(readFileSync(f, "utf8"));
  passed += r.numPassedTests;
  failed += r.numFailedTests + (r.numFailedTestSuites ?? 0);
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
  for (const file of r.testResults ?? []) {
    const name = String(file.name ?? "").replace(`${process.cwd()}/`, "");
    const bad = (file.assertionResults ?? []).filter((t) => t.status === "failed");
    for (const t of bad) {
      failures.push(`  ${f}: ${name} > ${t.fullName}\n${head((t.failureMessages ?? []).join("\n"))}`);
    }
    if (file.status === "failed" && bad.length === 0) {
      failures.push(`  ${f}: ${name} (failed outside its tests)\n${head(file.message)}`);
    }
  }
}
const label = total ? "total" : args[1];
console.log(`${label}: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
if (total && failures.length > 0) console.log(`failed:\n${failures.join("\n")}`);

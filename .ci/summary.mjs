// Prints vitest's JSON results as the plain line "<label>: N passed, N failed".
import { readFileSync, existsSync } from "node:fs";

const args = process.argv.slice(2);
const total = args.includes("--total");
const files = total ? args.filter((a) => a !== "--total") : [args[0]];
let passed = 0;
let failed = 0;
let skipped = 0;
for (const f of files) {
  if (!existsSync(f)) {
    failed += 1;
    continue;
  }
  const r = JSON.parse(readFileSync(f, "utf8"));
  passed += r.numPassedTests;
  failed += r.numFailedTests + (r.numFailedTestSuites ?? 0);
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
}
const label = total ? "total" : args[1];
console.log(`${label}: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);

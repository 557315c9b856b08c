// Vitest global setup: decides, once for the whole run, which Chromium the
// browser suites drive (test/support/chromium.ts launches it). Debian's
// when it is installed (its headless shell first: the full browser, in its new
// headless mode, cost three times the CPU per page here, about 0.6 core-seconds
// against 0.2); otherwise, or with PLATFORM_TEST_CHROMIUM=npm,
// the Chromium that @sparticuz/chromium carries in its npm package, unpacked
// here once (workers unpacking it side by side would race on the same files)
// with the shared libraries it ships, so that a machine with nothing but
// Node and npm runs the browser suites too.
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Debian's packages chromium-headless-shell and chromium, in the order they are preferred. */
const DEBIAN_CHROMIUMS = ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"];

export default async function setup(): Promise<void> {
  const choice = process.env["PLATFORM_TEST_CHROMIUM"] ?? "";
  if (choice !== "npm" && choice !== "") {
    if (!existsSync(choice)) throw new Error(`PLATFORM_TEST_CHROMIUM=${choice}: no such file (give a Chromium executable, or "npm")`);
    process.env["PLATFORM_TEST_CHROMIUM_PATH"] = choice;
    return;
  }
  const debian = choice === "" ? DEBIAN_CHROMIUMS.find((path) => existsSync(path)) : undefined;
  if (debian) {
    process.env["PLATFORM_TEST_CHROMIUM_PATH"] = debian;
    return;
  }
  // The package unpacks its bundled libraries (libnss3, libnspr4, …) only where it
  // believes it runs on Amazon Linux 2023, which is what those libraries are built for
  // and what a bare machine lacks; this variable is how it is told so.
  const saved = process.env["AWS_LAMBDA_JS_RUNTIME"];
  process.env["AWS_LAMBDA_JS_RUNTIME"] = "nodejs20.x";
  try {
    const { default: chromium } = await import("@sparticuz/chromium");
    process.env["PLATFORM_TEST_CHROMIUM_PATH"] = await chromium.executablePath();
  } finally {
    if (saved === undefined) delete process.env["AWS_LAMBDA_JS_RUNTIME"];
    else process.env["AWS_LAMBDA_JS_RUNTIME"] = saved;
  }
  process.env["PLATFORM_TEST_CHROMIUM_LIBS"] = join(tmpdir(), "al2023", "lib");
}

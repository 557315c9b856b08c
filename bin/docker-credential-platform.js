#!/usr/bin/env node
// docker-credential-platform: the credential helper docker, podman and skopeo run for the
// registries `platformctl auth configure-docker` set up. It starts as the platformctl launcher
// does (see there): dist/ while it is current, else the sources through tsx where installed.
import { distIsCurrent } from "./dist-current.js";

let tsx;
if (!distIsCurrent("dist/src/cli/docker-credential-main.js")) {
  try {
    tsx = await import("tsx/esm/api");
  } catch (e) {
    if (e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
  }
}
if (tsx) {
  tsx.register();
  await import("../src/cli/docker-credential-main.ts");
} else {
  await import("../dist/src/cli/docker-credential-main.js");
}

#!/usr/bin/env node
// docker-credential-platform: the credential helper docker, podman and skopeo run for the
// registries `platformctl auth configure-docker` set up. It starts as the platformctl launcher
// does (see there).
import { launch } from "./dist-current.js";

await launch("cli/docker-credential-main");

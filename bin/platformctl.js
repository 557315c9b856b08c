#!/usr/bin/env node
// The platformctl launcher. It runs the compiled dist/ that `npm run build` made (`npm ci` builds
// it) while dist/ is current: no file under src/ or gen/ is newer than it. A checkout being edited
// has newer sources: where the dev dependencies are installed, the launcher then runs the
// TypeScript sources through tsx, so the CLI is always the current code (tsx cost every start a
// third of a second more than the compiled code). Without them (`npm ci --omit=dev`, a container),
// dist/ is what there is.
import { launch } from "./dist-current.js";

await launch("cli/main");

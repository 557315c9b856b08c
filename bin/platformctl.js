#!/usr/bin/env node
// The platformctl launcher: runs the TypeScript entry through tsx (a runtime
// dependency), so `npx platformctl` works right after `npm ci`, with no build.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");

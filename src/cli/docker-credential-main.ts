import { runCredentialHelper } from "./docker-credential-helper.js";
import { processIo } from "./io.js";

// docker-credential-platform's process (bin/docker-credential-platform.js runs it). The exit code
// is set, not exited with: stdout is written out before the process ends.
process.exitCode = await runCredentialHelper(process.argv.slice(2), processIo());

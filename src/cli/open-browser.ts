import { spawn } from "node:child_process";

/**
 * Opens `url` in the user's browser ($BROWSER, else the platform's opener),
 * detached and best effort: the URL is always printed as well, so a missing
 * opener only means the user clicks it.
 */
export function openBrowser(url: string, env: NodeJS.ProcessEnv): void {
  const [command, args] = env["BROWSER"]
    ? [env["BROWSER"], [url]]
    : process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", '""', url.replace(/&/g, "^&")]]
        : ["xdg-open", [url]];
  try {
    // The opener gets the same environment the CLI was given (DISPLAY, PATH).
    const child = spawn(command, args, { detached: true, stdio: "ignore", env });
    child.on("error", () => undefined);
    child.unref();
  } catch {
    // no opener: the printed URL remains
  }
}

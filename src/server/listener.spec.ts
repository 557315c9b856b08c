import http2 from "node:http2";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { bind } from "./listener.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

describe("listener", () => {
  it("lets go of its handler at close, although Node keeps a closed HTTP/2 session until its idle timer fires", async () => {
    const listener = await bind({ host: "127.0.0.1", port: 0, timeouts: { headersMs: 5_000, requestMs: 10_000, idleMs: 60_000 } });
    // What a handler reaches (the application, its store) stands in as this object.
    let app: { name: string } | undefined = { name: "app" };
    const collected = new WeakRef(app);
    listener.serve(
      ((reached) => (_req, res) => {
        res.end(reached.name);
      })(app),
    );
    app = undefined;

    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    const body = await new Promise<string>((resolve, reject) => {
      const req = session.request({ ":path": "/" });
      let text = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (text += chunk));
      req.on("end", () => resolve(text));
      req.on("error", reject);
      req.end();
    });
    expect(body).toBe("app");
    session.close();
    await listener.close(1_000);

    // Collection is not immediate (weak references are cleared after a turn); a few tries.
    for (let i = 0; i < 20 && collected.deref(); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      gc();
    }
    expect(collected.deref()).toBeUndefined();
  });
});

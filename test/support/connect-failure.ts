import { ConnectError } from "@connectrpc/connect";

/** The error a Connect call failed with; throws when it succeeded. */
export async function connectFailure(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error("expected the call to fail");
}

import { toJson } from "@bufbuild/protobuf";
import { EventRecorder } from "../../src/events/index.js";

/**
 * An EventRecorder for unit tests: events are rendered as plain protobuf JSON, nobody is told of
 * them (no NOTIFY), and a failure to announce fails the test.
 */
export function testEventRecorder(clock: () => Date): EventRecorder {
  return new EventRecorder({
    source: "https://platform.test",
    clock,
    render: (desc, message) => toJson(desc, message),
    retryForMs: 86_400_000,
    announce: async () => {},
    onError: (e) => {
      throw e;
    },
  });
}

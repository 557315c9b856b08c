import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DescService } from "@bufbuild/protobuf";

const GEN = fileURLToPath(new URL("../../gen/platform/", import.meta.url));

/**
 * Every service exported by the generated gen/platform/**\/*_pb.ts files whose
 * path (relative to gen/platform/) `include` accepts, found by reading the
 * directory rather than through gen/api-index.ts, so tests can check the index.
 */
export async function servicesInGen(include: (file: string) => boolean = () => true): Promise<DescService[]> {
  const files = readdirSync(GEN, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith("_pb.ts") && include(f))
    .sort();
  const services: DescService[] = [];
  for (const file of files) {
    const mod = (await import(`${GEN}${file}`)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if ((value as { kind?: unknown } | null)?.kind === "service") services.push(value as DescService);
    }
  }
  return services;
}

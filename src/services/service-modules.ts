import type { DescService } from "@bufbuild/protobuf";
import type { ApiService } from "./api-service.js";

// Which module implements a proto service, by a convention from its proto file, so that adding a
// service needs no line in an index (docs/contributing.md, "Adding a resource").

/** Where a service's implementation lives: the module (relative to this directory) and the name it exports. */
export interface ImplementationModule {
  path: string;
  exportName: string;
}

/**
 * `platform/<domain>/<version>/<file_name>.proto`, service `<Name>Service` →
 * `./<domain>/<file-name>.js` exporting `<name>Service`:
 * `platform/iam/v2beta1/group_invites.proto`'s GroupInvitesService is `./iam/group-invites.js`'s `groupInvitesService`.
 */
export function implementationModule(service: DescService): ImplementationModule {
  const segments = service.file.name.split("/");
  const domain = segments[1];
  const file = segments.at(-1);
  if (segments[0] !== "platform" || segments.length !== 4 || !domain || !file) {
    throw new Error(`${service.typeName}: its proto file ${service.file.name}.proto is not platform/<domain>/<version>/<name>.proto`);
  }
  return { path: `./${domain}/${file.replace(/_/g, "-")}.js`, exportName: service.name.charAt(0).toLowerCase() + service.name.slice(1) };
}

type Load = (path: string) => Promise<Record<string, unknown>>;

const importHere: Load = (path) => import(new URL(path, import.meta.url).href) as Promise<Record<string, unknown>>;

/**
 * The implementation of each service, in the order given, each loaded from its conventional
 * module. A module that is missing, or does not export the service's ApiService under its
 * conventional name, throws, naming the module and the export it expected.
 */
export async function loadImplementations(services: readonly DescService[], load: Load = importHere): Promise<ApiService[]> {
  return Promise.all(
    services.map(async (service) => {
      const { path, exportName } = implementationModule(service);
      const where = `src/services/${path.slice(2).replace(/\.js$/, ".ts")}`;
      let module: Record<string, unknown>;
      try {
        module = await load(path);
      } catch (e) {
        throw new Error(`${service.typeName} has no implementation: cannot load ${where} (${e instanceof Error ? e.message : String(e)})`, {
          cause: e,
        });
      }
      const exported = module[exportName] as Partial<ApiService> | undefined;
      if (exported?.service !== service || typeof exported.implement !== "function") {
        throw new Error(`${where} must export ${exportName}, the ApiService of ${service.typeName} (resourceService or apiService)`);
      }
      return exported as ApiService;
    }),
  );
}

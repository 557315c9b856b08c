// Which module implements an API service, by a convention from its proto file, so that adding a
// service needs no line in an index (docs/contributing.md, "Adding a resource"). Used by
// tools/protoc-gen-api-index.mjs to write gen/api-implementations.ts, and by its test.

/**
 * `platform/<domain>/<version>/<file_name>.proto`, service `<Name>Service` →
 * `../src/services/<domain>/<file-name>.js` (from gen/) exporting `<name>Service`.
 * @param {{ typeName: string, name: string, file: { name: string } }} service
 * @returns {{ path: string, exportName: string }}
 */
export function implementationOf(service) {
  const [root, domain, , file, ...rest] = service.file.name.split("/");
  if (root !== "platform" || !domain || !file || rest.length) {
    throw new Error(`${service.typeName}: its proto file ${service.file.name}.proto is not platform/<domain>/<version>/<name>.proto`);
  }
  return {
    path: `../src/services/${domain}/${file.replace(/_/g, "-")}.js`,
    exportName: service.name.charAt(0).toLowerCase() + service.name.slice(1),
  };
}

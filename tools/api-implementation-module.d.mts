// Types of api-implementation-module.mjs (plain JavaScript, which buf runs with node alone).
export function implementationOf(service: { typeName: string; name: string; file: { name: string } }): { path: string; exportName: string };

import { toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import {
  FileDescriptorProtoSchema,
  type DescriptorProto,
  type EnumDescriptorProto,
  type FieldDescriptorProto,
  type FileDescriptorProto,
} from "@bufbuild/protobuf/wkt";

/** One proto file, serialized once so that every reflection answer reuses the bytes. */
interface IndexedFile {
  readonly name: string;
  readonly bytes: Uint8Array;
  /** Names of the files this one imports, in import order. */
  readonly imports: readonly string[];
}

/**
 * Answers the lookups of the gRPC reflection protocol from protobuf-es file
 * descriptors: which file declares a symbol or an extension, and the
 * serialized file with its transitive imports.
 *
 * Symbols are read from each FileDescriptorProto rather than from the
 * protobuf-es Desc* objects, because the latter hide synthetic map-entry
 * messages that protoc (and therefore grpc-go's reflection) exposes.
 */
export class DescriptorIndex {
  private readonly files = new Map<string, IndexedFile>();
  private readonly symbols = new Map<string, string>();
  /** "<extendee full name>" → field number → file name. */
  private readonly extensions = new Map<string, Map<number, string>>();
  private readonly serviceNames = new Set<string>();
  /** Message full names, to tell them from other symbols for extension queries. */
  private readonly messageNames = new Set<string>();

  /** Indexes the service, its file and every file that file depends on. */
  addService(service: DescService): void {
    this.serviceNames.add(service.typeName);
    this.addFile(service.file);
  }

  hasService(typeName: string): boolean {
    return this.serviceNames.has(typeName);
  }

  /** Full names of the indexed services, sorted so that answers are stable. */
  services(): string[] {
    return [...this.serviceNames].sort();
  }

  /** The file declaring `symbol` (a package-qualified name), if indexed. */
  fileContainingSymbol(symbol: string): string | undefined {
    return this.symbols.get(stripLeadingDot(symbol));
  }

  /** The file declaring extension `number` of message `extendee`, if indexed. */
  fileContainingExtension(extendee: string, number: number): string | undefined {
    return this.extensions.get(stripLeadingDot(extendee))?.get(number);
  }

  /**
   * Field numbers of the known extensions of `typeName`, ascending; undefined
   * when `typeName` is not an indexed message.
   */
  extensionNumbersOf(typeName: string): number[] | undefined {
    const name = stripLeadingDot(typeName);
    if (!this.messageNames.has(name)) {
      return undefined;
    }
    return [...(this.extensions.get(name)?.keys() ?? [])].sort((a, b) => a - b);
  }

  hasFile(name: string): boolean {
    return this.files.has(name);
  }

  /**
   * The serialized file `name` followed by its transitive imports, breadth
   * first, each once. Files listed in `skip` are left out, except `name`
   * itself, which is always first (as grpc-go does, so a client always gets
   * the file it asked for).
   */
  fileWithImports(name: string, skip: ReadonlySet<string> = new Set()): IndexedFile[] {
    const root = this.files.get(name);
    if (root === undefined) {
      return [];
    }
    const out: IndexedFile[] = [root];
    const visited = new Set<string>([name]);
    const queue = [...root.imports];
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      if (visited.has(next)) {
        continue;
      }
      visited.add(next);
      const file = this.files.get(next);
      if (file === undefined) {
        continue;
      }
      if (!skip.has(next)) {
        out.push(file);
      }
      queue.push(...file.imports);
    }
    return out;
  }

  private addFile(file: DescFile): void {
    const proto = file.proto;
    if (this.files.has(proto.name)) {
      return;
    }
    this.files.set(proto.name, {
      name: proto.name,
      bytes: toBinary(FileDescriptorProtoSchema, proto),
      // protobuf-es restores `dependency` from the generated imports; fall
      // back to the Desc graph should a descriptor ever arrive without it.
      imports: proto.dependency.length > 0 ? [...proto.dependency] : file.dependencies.map((d) => d.proto.name),
    });
    this.indexSymbols(proto);
    for (const dep of file.dependencies) {
      this.addFile(dep);
    }
  }

  private indexSymbols(proto: FileDescriptorProto): void {
    const file = proto.name;
    const scope = proto.package;
    for (const message of proto.messageType) {
      this.indexMessage(file, scope, message);
    }
    for (const e of proto.enumType) {
      this.indexEnum(file, scope, e);
    }
    for (const ext of proto.extension) {
      this.indexExtension(file, scope, ext);
    }
    for (const service of proto.service) {
      const serviceName = join(scope, service.name);
      this.addSymbol(serviceName, file);
      for (const method of service.method) {
        this.addSymbol(join(serviceName, method.name), file);
      }
    }
  }

  private indexMessage(file: string, scope: string, message: DescriptorProto): void {
    const name = join(scope, message.name);
    this.addSymbol(name, file);
    this.messageNames.add(name);
    for (const field of message.field) {
      this.addSymbol(join(name, field.name), file);
    }
    for (const oneof of message.oneofDecl) {
      this.addSymbol(join(name, oneof.name), file);
    }
    for (const nested of message.nestedType) {
      this.indexMessage(file, name, nested);
    }
    for (const e of message.enumType) {
      this.indexEnum(file, name, e);
    }
    for (const ext of message.extension) {
      this.indexExtension(file, name, ext);
    }
  }

  private indexEnum(file: string, scope: string, e: EnumDescriptorProto): void {
    this.addSymbol(join(scope, e.name), file);
    // Enum values are siblings of their enum in protobuf scoping (C++ rules):
    // `pkg.Enum.VALUE` is not a name, `pkg.VALUE` is.
    for (const value of e.value) {
      this.addSymbol(join(scope, value.name), file);
    }
  }

  private indexExtension(file: string, scope: string, ext: FieldDescriptorProto): void {
    this.addSymbol(join(scope, ext.name), file);
    const extendee = stripLeadingDot(ext.extendee);
    let numbers = this.extensions.get(extendee);
    if (numbers === undefined) {
      numbers = new Map();
      this.extensions.set(extendee, numbers);
    }
    if (!numbers.has(ext.number)) {
      numbers.set(ext.number, file);
    }
  }

  private addSymbol(name: string, file: string): void {
    // First declaration wins; protoc forbids duplicates, so a clash can only
    // come from two different builds of one file, and either answer is valid.
    if (!this.symbols.has(name)) {
      this.symbols.set(name, file);
    }
  }
}

function join(scope: string, name: string): string {
  return scope === "" ? name : `${scope}.${name}`;
}

function stripLeadingDot(name: string): string {
  return name.startsWith(".") ? name.slice(1) : name;
}

import type { DescField, DescMessage } from "@bufbuild/protobuf";

/**
 * Finds a message's field by its proto name or its JSON name, as protojson
 * and the query-parameter rules both accept. One index per message type,
 * built on first use and kept for the handler's lifetime.
 */
export class FieldLookup {
  private readonly byMessage = new Map<string, ReadonlyMap<string, DescField>>();

  find(message: DescMessage, name: string): DescField | undefined {
    let index = this.byMessage.get(message.typeName);
    if (index === undefined) {
      const m = new Map<string, DescField>();
      for (const f of message.fields) {
        m.set(f.name, f);
        m.set(f.jsonName, f);
      }
      index = m;
      this.byMessage.set(message.typeName, index);
    }
    return index.get(name);
  }
}

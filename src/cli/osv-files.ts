import { readFile } from "node:fs/promises";
import type { JsonObject } from "./api-client.js";
import { CliError, EXIT } from "./errors.js";

/** One OSV document and where it came from (for error lines). */
export interface OsvDocument {
  file: string;
  /** Its position when the file holds an array. */
  index?: number;
  document: JsonObject;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `file` or `file[3]`. */
export function sourceOf(doc: OsvDocument): string {
  return doc.index === undefined ? doc.file : `${doc.file}[${doc.index}]`;
}

/** Reads OSV files, each one document or an array of them; any unreadable one stops everything before anything is sent. */
export async function readOsvFiles(files: string[]): Promise<OsvDocument[]> {
  const docs: OsvDocument[] = [];
  for (const file of files) {
    let value: unknown;
    try {
      value = JSON.parse(await readFile(file, "utf8"));
    } catch (e) {
      const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw new CliError(`${file}: ${e instanceof SyntaxError ? `not JSON: ${why}` : `cannot read: ${why}`}`, EXIT.usage);
    }
    const entries = Array.isArray(value) ? value : [value];
    entries.forEach((document: unknown, i) => {
      const doc = { file, index: Array.isArray(value) ? i : undefined };
      if (!isObject(document)) throw new CliError(`${sourceOf({ ...doc, document: {} })}: an OSV document must be a JSON object`, EXIT.usage);
      docs.push({ ...doc, document });
    });
  }
  return docs;
}

/**
 * Consecutive batches of at most `maxCount` documents and about `maxBytes`
 * of JSON (the server takes 1 MiB bodies); a larger document goes alone.
 */
export function batches(docs: OsvDocument[], maxCount: number, maxBytes: number): OsvDocument[][] {
  const out: OsvDocument[][] = [];
  let current: OsvDocument[] = [];
  let bytes = 0;
  for (const doc of docs) {
    const size = Buffer.byteLength(JSON.stringify(doc.document)) + 1;
    if (current.length > 0 && (current.length >= maxCount || bytes + size > maxBytes)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(doc);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

import { readFile } from "node:fs/promises";
import type { JsonObject } from "./api-client.js";

/** One OSV document and where it came from (for error lines). */
export interface OsvDocument {
  file: string;
  /** Its position when the file holds an array. */
  index?: number;
  /** Its position among every entry of every file read (the index `-o json` reports). */
  ordinal: number;
  document: JsonObject;
}

/** Something that will not be sent: a file that could not be read, or an entry that is no document. */
export interface OsvProblem {
  /** `file` or `file[3]`. */
  source: string;
  reason: string;
}

export interface OsvRead {
  documents: OsvDocument[];
  /** Files that could not be read or are not JSON (their entries are unknown, so counted by file). */
  unreadable: OsvProblem[];
  /** Entries of readable files that are not JSON objects: failed documents. */
  invalid: OsvProblem[];
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `file` or `file[3]`. */
export function sourceOf(doc: { file: string; index?: number }): string {
  return doc.index === undefined ? doc.file : `${doc.file}[${doc.index}]`;
}

/**
 * Reads OSV files, each one document or an array of them. A file that cannot
 * be read does not stop the others: it is reported and the rest are imported.
 */
export async function readOsvFiles(files: string[]): Promise<OsvRead> {
  const read: OsvRead = { documents: [], unreadable: [], invalid: [] };
  let ordinal = 0;
  for (const file of files) {
    let value: unknown;
    try {
      value = JSON.parse(await readFile(file, "utf8"));
    } catch (e) {
      const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      read.unreadable.push({ source: file, reason: e instanceof SyntaxError ? `not JSON: ${why}` : `cannot read: ${why}` });
      continue;
    }
    const entries: unknown[] = Array.isArray(value) ? value : [value];
    entries.forEach((document, i) => {
      const where = { file, index: Array.isArray(value) ? i : undefined };
      if (isObject(document)) read.documents.push({ ...where, ordinal, document });
      else read.invalid.push({ source: sourceOf(where), reason: "an OSV document must be a JSON object" });
      ordinal++;
    });
  }
  return read;
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

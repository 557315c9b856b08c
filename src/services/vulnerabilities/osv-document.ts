import { createHash } from "node:crypto";
import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { schema } from "../../db/index.js";
import { invalidArgument, invalidArguments, type FieldViolation } from "../../errors/index.js";

/** The columns an OSV document determines (everything but the record times). */
export type OsvAdvisory = Omit<typeof schema.advisories.$inferInsert, "createTime" | "updateTime"> & { modified: string };

type SeverityColumn = schema.SeverityColumn;
type AdvisoryEventColumn = schema.AdvisoryEventColumn;

const MAX_DOCUMENTS = 1000;
const MAX_ID_LENGTH = 255;
const MAX_ALIASES = 100;
const MAX_NAME_LENGTH = 1000;
const MAX_SUMMARY_LENGTH = 4096;
const IMPORT_AUTHOR = "osv-import";

// An id that is one URL-safe path segment is its own uid; any other id is
// hashed into `osv_<32 hex>`, which no direct uid can equal (no `_` allowed).
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9.-]{0,127}$/;

export function advisoryUid(id: string): string {
  return SAFE_ID.test(id) ? id : `osv_${createHash("sha256").update(id).digest("hex").slice(0, 32)}`;
}

/** Fixed-width UTC text with nanoseconds: sorts chronologically as text. */
export function canonicalTime(t: Timestamp): string {
  return `${new Date(Number(t.seconds) * 1000).toISOString().slice(0, 19)}.${String(t.nanos).padStart(9, "0")}Z`;
}

export function parseTime(text: string): Timestamp {
  return fromJson(TimestampSchema, text);
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads one document, recording every violation under `documents[i]`. */
class DocumentReader {
  readonly violations: FieldViolation[] = [];
  constructor(private readonly prefix: string) {}

  fail(path: string, description: string): void {
    this.violations.push({ field: `${this.prefix}.${path}`, description });
  }

  string(obj: JsonObject, key: string, path: string, opts: { required?: boolean; max?: number } = {}): string {
    const v = obj[key];
    if (v === undefined || v === null || v === "") {
      if (opts.required) this.fail(path, "is required");
      return "";
    }
    if (typeof v !== "string") {
      this.fail(path, "must be a string");
      return "";
    }
    if (opts.max && v.length > opts.max) {
      this.fail(path, `must be at most ${opts.max} characters`);
      return "";
    }
    // Names and ids are indexed: at most two bytes a character on average keeps
    // the longest under PostgreSQL's index entry limit (docs/security.md, "Input").
    if (opts.max && Buffer.byteLength(v, "utf8") > 2 * opts.max) {
      this.fail(path, `must be at most ${2 * opts.max} bytes in UTF-8`);
      return "";
    }
    return v;
  }

  /** An RFC 3339 time in canonical form, or null when absent or invalid. */
  time(obj: JsonObject, key: string, path: string, required = false): string | null {
    const text = this.string(obj, key, path, { required });
    if (!text) return null;
    try {
      return canonicalTime(parseTime(text));
    } catch {
      this.fail(path, "must be an RFC 3339 timestamp such as 2024-01-02T15:04:05Z");
      return null;
    }
  }

  array(obj: JsonObject, key: string, path: string): JsonValue[] {
    const v = obj[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) {
      this.fail(path, "must be a JSON array");
      return [];
    }
    return v;
  }

  object(obj: JsonObject, key: string, path: string): JsonObject | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (!isObject(v)) {
      this.fail(path, "must be a JSON object");
      return undefined;
    }
    return v;
  }

  /** The objects of an array field, each with its path. */
  objects(obj: JsonObject, key: string, path: string): [JsonObject, string][] {
    const out: [JsonObject, string][] = [];
    this.array(obj, key, path).forEach((v, i) => {
      if (isObject(v)) out.push([v, `${path}[${i}]`]);
      else this.fail(`${path}[${i}]`, "must be a JSON object");
    });
    return out;
  }
}

function readAliases(r: DocumentReader, doc: JsonObject): string[] {
  const values = r.array(doc, "aliases", "aliases");
  if (values.length > MAX_ALIASES) r.fail("aliases", `at most ${MAX_ALIASES} aliases`);
  const out = new Set<string>();
  values.forEach((v, i) => {
    const alias = r.string({ v }, "v", `aliases[${i}]`, { required: true, max: MAX_ID_LENGTH });
    if (alias) out.add(alias);
  });
  return [...out];
}

function readSeverities(r: DocumentReader, doc: JsonObject): SeverityColumn[] {
  return r.objects(doc, "severity", "severity").map(([s, at]) => ({
    type: r.string(s, "type", `${at}.type`, { required: true, max: MAX_NAME_LENGTH }),
    score: r.string(s, "score", `${at}.score`, { required: true, max: MAX_NAME_LENGTH }),
  }));
}

/** The first affected package, and every fixed version named by any affected range. */
function readAffected(r: DocumentReader, doc: JsonObject): { type: string; name: string; fixed: string[] } {
  let component: { type: string; name: string } | undefined;
  const fixed = new Set<string>();
  for (const [affected, at] of r.objects(doc, "affected", "affected")) {
    const pkg = r.object(affected, "package", `${at}.package`);
    if (pkg) {
      const name = r.string(pkg, "name", `${at}.package.name`, { max: MAX_NAME_LENGTH });
      const type = r.string(pkg, "ecosystem", `${at}.package.ecosystem`, { max: MAX_NAME_LENGTH });
      component ??= { type, name };
    }
    for (const [range, rangeAt] of r.objects(affected, "ranges", `${at}.ranges`)) {
      for (const [event, eventAt] of r.objects(range, "events", `${rangeAt}.events`)) {
        const version = r.string(event, "fixed", `${eventAt}.fixed`, { max: MAX_NAME_LENGTH });
        if (version) fixed.add(version);
      }
    }
  }
  return { ...(component ?? { type: "", name: "" }), fixed: [...fixed] };
}

function readArtifact(r: DocumentReader, doc: JsonObject): { name: string; type: string } {
  const specific = isObject(doc["database_specific"]) ? doc["database_specific"] : {};
  const artifact = r.object(specific, "artifact", "database_specific.artifact") ?? {};
  return {
    name: r.string(artifact, "name", "database_specific.artifact.name", { max: MAX_NAME_LENGTH }),
    type: r.string(artifact, "type", "database_specific.artifact.type", { max: MAX_NAME_LENGTH }),
  };
}

/** detection at `published`, fixed at `modified`, withdrawn at `withdrawn`; oldest first. */
function importEvents(published: string | null, modified: string, withdrawn: string | null, fixed: string[]): AdvisoryEventColumn[] {
  const event = (type: string, createTime: string, fixedVersion = ""): AdvisoryEventColumn => ({
    type,
    createTime,
    author: IMPORT_AUTHOR,
    fixedVersion,
  });
  const events = [
    ...(published ? [event("detection", published)] : []),
    ...fixed.map((v) => event("fixed", modified, v)),
    ...(withdrawn ? [event("withdrawn", withdrawn)] : []),
  ];
  return events.sort((a, b) => (a.createTime < b.createTime ? -1 : a.createTime > b.createTime ? 1 : 0));
}

function readDocument(value: JsonObject, index: number): { advisory?: OsvAdvisory; violations: FieldViolation[] } {
  const r = new DocumentReader(`documents[${index}]`);
  const id = r.string(value, "id", "id", { required: true, max: MAX_ID_LENGTH });
  const modified = r.time(value, "modified", "modified", true);
  const published = r.time(value, "published", "published");
  const withdrawn = r.time(value, "withdrawn", "withdrawn");
  const aliases = readAliases(r, value);
  const severities = readSeverities(r, value);
  const component = readAffected(r, value);
  const artifact = readArtifact(r, value);
  const summary = r.string(value, "summary", "summary", { max: MAX_SUMMARY_LENGTH });
  const details = r.string(value, "details", "details");
  if (r.violations.length || !modified) return { violations: r.violations };
  return {
    violations: [],
    advisory: {
      uid: advisoryUid(id),
      advisoryId: id,
      aliases,
      artifactName: artifact.name,
      artifactType: artifact.type,
      componentName: component.name,
      componentType: component.type,
      severities,
      events: importEvents(published, modified, withdrawn, component.fixed),
      summary,
      details,
      published,
      modified,
      withdrawn,
    },
  };
}

/**
 * Validates a batch of OSV documents (https://ossf.github.io/osv-schema/);
 * INVALID_ARGUMENT naming every offending field (`documents[2].modified`).
 */
export function readOsvDocuments(documents: JsonObject[]): OsvAdvisory[] {
  if (!documents.length) throw invalidArgument("documents", "must hold at least one OSV document");
  if (documents.length > MAX_DOCUMENTS) throw invalidArgument("documents", `at most ${MAX_DOCUMENTS} documents per call`);
  const read = documents.map(readDocument);
  const violations = read.flatMap((d) => d.violations);
  if (violations.length) throw invalidArguments(violations);
  return read.map((d) => d.advisory!);
}

// Path templates of google.api.HttpRule (google/api/http.proto):
//
//   Template = "/" Segments [ Verb ] ;
//   Segments = Segment { "/" Segment } ;
//   Segment  = "*" | "**" | LITERAL | Variable ;
//   Variable = "{" FieldPath [ "=" Segments ] "}" ;
//   FieldPath = IDENT { "." IDENT } ;
//   Verb     = ":" LITERAL ;
//
// Templates are parsed once, at start-up, into segments that a trie
// (path-trie.ts) matches without regular expressions.

export type TemplateSegment =
  | { readonly kind: "literal"; readonly value: string }
  | { readonly kind: "wildcard" } // `*`: exactly one segment
  | { readonly kind: "deep-wildcard" }; // `**`: one or more segments, always last

export interface TemplateVariable {
  /** The field path, as written in the template (proto names): `group.uid` → ["group", "uid"]. */
  readonly fieldPath: readonly string[];
  /** Index of the first template segment the variable covers. */
  readonly start: number;
  /** Index after the last template segment the variable covers. */
  readonly end: number;
  /** True unless the variable is a single `*` segment. */
  readonly multiSegment: boolean;
}

export interface PathTemplate {
  readonly source: string;
  readonly segments: readonly TemplateSegment[];
  readonly variables: readonly TemplateVariable[];
  /** The custom verb without its colon, or "" for none. */
  readonly verb: string;
}

export class TemplateSyntaxError extends Error {
  constructor(template: string, reason: string) {
    super(`invalid path template "${template}": ${reason}`);
    this.name = "TemplateSyntaxError";
  }
}

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;
// Characters that end a literal: structure of the grammar, or not allowed in a path.
const LITERAL_STOP = new Set(["/", "{", "}", "*", "=", ":", "?", "#"]);

/** Parses a template; throws TemplateSyntaxError for anything outside the grammar. */
export function parsePathTemplate(source: string): PathTemplate {
  const p = new Parser(source);
  return p.parseTemplate();
}

class Parser {
  private pos = 0;
  private readonly segments: TemplateSegment[] = [];
  private readonly variables: TemplateVariable[] = [];

  constructor(private readonly src: string) {}

  parseTemplate(): PathTemplate {
    this.expect("/");
    this.parseSegments(false);
    let verb = "";
    if (this.peek() === ":") {
      this.pos++;
      verb = this.parseLiteral();
    }
    if (this.pos !== this.src.length) {
      this.fail(`unexpected "${this.src[this.pos]}" at offset ${this.pos}`);
    }
    const deepAt = this.segments.findIndex((s) => s.kind === "deep-wildcard");
    if (deepAt !== -1 && deepAt !== this.segments.length - 1) {
      this.fail(`"**" must be the last segment`);
    }
    const seen = new Set<string>();
    for (const v of this.variables) {
      const key = v.fieldPath.join(".");
      if (seen.has(key)) this.fail(`field "${key}" is bound twice`);
      seen.add(key);
    }
    return { source: this.src, segments: this.segments, variables: this.variables, verb };
  }

  private parseSegments(insideVariable: boolean): void {
    for (;;) {
      this.parseSegment(insideVariable);
      if (this.peek() !== "/") return;
      this.pos++;
    }
  }

  private parseSegment(insideVariable: boolean): void {
    const c = this.peek();
    if (c === "*") {
      this.pos++;
      if (this.peek() === "*") {
        this.pos++;
        this.segments.push({ kind: "deep-wildcard" });
      } else {
        this.segments.push({ kind: "wildcard" });
      }
      return;
    }
    if (c === "{") {
      if (insideVariable) this.fail("variables cannot nest");
      this.parseVariable();
      return;
    }
    this.segments.push({ kind: "literal", value: this.parseLiteral() });
  }

  private parseVariable(): void {
    this.expect("{");
    const fieldPath = [this.parseIdent()];
    while (this.peek() === ".") {
      this.pos++;
      fieldPath.push(this.parseIdent());
    }
    const start = this.segments.length;
    if (this.peek() === "=") {
      this.pos++;
      this.parseSegments(true);
    } else {
      this.segments.push({ kind: "wildcard" });
    }
    this.expect("}");
    const end = this.segments.length;
    const only = this.segments[start];
    const multiSegment = !(end - start === 1 && only?.kind === "wildcard");
    this.variables.push({ fieldPath, start, end, multiSegment });
  }

  private parseIdent(): string {
    const begin = this.pos;
    const first = this.peek();
    if (first === undefined || !IDENT_START.test(first)) this.fail(`expected a field name at offset ${this.pos}`);
    this.pos++;
    for (let c = this.peek(); c !== undefined && IDENT_PART.test(c); c = this.peek()) this.pos++;
    return this.src.slice(begin, this.pos);
  }

  private parseLiteral(): string {
    const begin = this.pos;
    for (let c = this.peek(); c !== undefined && !LITERAL_STOP.has(c); c = this.peek()) this.pos++;
    if (this.pos === begin) this.fail(`expected a literal at offset ${this.pos}`);
    const raw = this.src.slice(begin, this.pos);
    const decoded = percentDecode(raw);
    if (decoded === undefined) this.fail(`malformed percent-encoding in "${raw}"`);
    // A request's `%2F` always separates segments, so a literal holding one could never match.
    if (decoded.includes("/")) this.fail(`literal "${raw}" holds an encoded slash`);
    return decoded;
  }

  private peek(): string | undefined {
    return this.src[this.pos];
  }

  private expect(c: string): void {
    if (this.src[this.pos] !== c) this.fail(`expected "${c}" at offset ${this.pos}`);
    this.pos++;
  }

  private fail(reason: string): never {
    throw new TemplateSyntaxError(this.src, reason);
  }
}

const ENCODED_SLASH = /%2f/i;

/**
 * Decodes %XX escapes (UTF-8). Returns undefined for malformed escapes or
 * invalid UTF-8 instead of throwing. Request segments reach it already split
 * at their encoded slashes (splitRequestPath), so no `%2F` is left to decode
 * into a `/` here.
 */
export function percentDecode(s: string): string | undefined {
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

export interface RequestPath {
  /** Raw (still percent-encoded) segments, without the verb. */
  readonly segments: readonly string[];
  readonly verb: string;
  /**
   * Indexes `k` of the segments that an encoded slash (`%2F`), not a `/`,
   * separates from segment `k - 1`. Only a `**` may take such a boundary
   * (docs/design.md, "Encoded slashes in REST paths").
   */
  readonly encodedSlashes: readonly number[];
}

/**
 * Splits a URL path (no query) into the ways it can be read: with the text
 * after the last `:` of the last segment as a custom verb (when there is one),
 * then as plain segments. A leading "/" is required.
 *
 * With `expandEncodedSlashes` (the default) the path is read in its literal
 * form: `%2F` separates segments as `/` does, and `encodedSlashes` says where
 * it did. Without it, a `%2F` stays inside its segment (for diagnosing a
 * request whose literal form matched nothing).
 */
export function splitRequestPath(path: string, expandEncodedSlashes = true): RequestPath[] {
  if (path.length === 0 || path.charCodeAt(0) !== 47 /* / */) return [];
  const segments: string[] = [];
  const encodedSlashes: number[] = [];
  for (const raw of path.slice(1).split("/")) {
    if (!expandEncodedSlashes || !ENCODED_SLASH.test(raw)) {
      segments.push(raw);
      continue;
    }
    raw.split(/%2f/i).forEach((piece, i) => {
      if (i > 0) encodedSlashes.push(segments.length);
      segments.push(piece);
    });
  }
  const lastIndex = segments.length - 1;
  const last = segments[lastIndex] ?? "";
  const colon = last.lastIndexOf(":");
  const plain: RequestPath = { segments, verb: "", encodedSlashes };
  if (colon <= 0 || colon === last.length - 1) return [plain];
  const withVerb = segments.slice();
  withVerb[lastIndex] = last.slice(0, colon);
  return [{ segments: withVerb, verb: last.slice(colon + 1), encodedSlashes }, plain];
}

export interface CapturedValue {
  readonly variable: TemplateVariable;
  /** Decoded value, or undefined when the captured text is not valid percent-encoding. */
  readonly value: string | undefined;
  /** The raw captured text, for error messages. */
  readonly raw: string;
}

/**
 * The values of a template's variables for request segments that the
 * template matched. A variable ending in `**` takes every remaining segment.
 */
export function captureVariables(template: PathTemplate, segments: readonly string[]): CapturedValue[] {
  const out: CapturedValue[] = [];
  const lastTemplate = template.segments.length - 1;
  for (const v of template.variables) {
    const end = v.end - 1 === lastTemplate && template.segments[lastTemplate]?.kind === "deep-wildcard" ? segments.length : v.end;
    const raw = end - v.start === 1 ? (segments[v.start] ?? "") : segments.slice(v.start, end).join("/");
    out.push({ variable: v, raw, value: percentDecode(raw) });
  }
  return out;
}

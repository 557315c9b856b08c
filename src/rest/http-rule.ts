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
// (see template-trie.ts) matches without regular expressions.

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
  /**
   * True unless the variable is a single `*` segment. Multi-segment captures
   * keep `%2F` encoded (the spec's reserved expansion), single ones decode it.
   */
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
    const decoded = percentDecode(raw, false);
    if (decoded === undefined) this.fail(`malformed percent-encoding in "${raw}"`);
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

const ENCODED_SLASH = /%2f/gi;

/**
 * Decodes %XX escapes (UTF-8). With `keepEncodedSlash`, `%2F`/`%2f` stay
 * as they are, as the spec requires for multi-segment captures. Returns
 * undefined for malformed escapes or invalid UTF-8 instead of throwing.
 */
export function percentDecode(s: string, keepEncodedSlash: boolean): string | undefined {
  if (!s.includes("%")) return s;
  try {
    if (!keepEncodedSlash) return decodeURIComponent(s);
    // Decode between the encoded slashes and put each one back verbatim.
    let out = "";
    let last = 0;
    for (const m of s.matchAll(ENCODED_SLASH)) {
      out += decodeURIComponent(s.slice(last, m.index)) + m[0];
      last = m.index + m[0].length;
    }
    return out + decodeURIComponent(s.slice(last));
  } catch {
    return undefined;
  }
}

export interface RequestPath {
  /** Raw (still percent-encoded) segments, without the verb. */
  readonly segments: readonly string[];
  readonly verb: string;
}

/**
 * Splits a URL path (no query) into the ways it can be read: with the text
 * after the last `:` of the last segment as a custom verb (when there is one),
 * then as plain segments. A leading "/" is required.
 */
export function splitRequestPath(path: string): RequestPath[] {
  if (path.length === 0 || path.charCodeAt(0) !== 47 /* / */) return [];
  const segments = path.slice(1).split("/");
  const lastIndex = segments.length - 1;
  const last = segments[lastIndex] ?? "";
  const colon = last.lastIndexOf(":");
  const plain: RequestPath = { segments, verb: "" };
  if (colon <= 0 || colon === last.length - 1) return [plain];
  const withVerb = segments.slice();
  withVerb[lastIndex] = last.slice(0, colon);
  return [{ segments: withVerb, verb: last.slice(colon + 1) }, plain];
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
    out.push({ variable: v, raw, value: percentDecode(raw, v.multiSegment) });
  }
  return out;
}

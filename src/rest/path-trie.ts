import { percentDecode, splitRequestPath, type PathTemplate, type TemplateSegment } from "./http-rule.js";

// A trie over template segments. Matching walks the request's segments
// once per way of reading the path (with or without a custom verb), trying
// at each level a literal child first, then `*`, then `**`; the first
// template that also accepts the HTTP method wins. Literal-over-variable is
// therefore decided by the structure, not by insertion order.

interface Leaf<T> {
  readonly template: PathTemplate;
  readonly value: T;
}

/** HTTP method → leaf, per custom verb ("" for none). */
type Terminals<T> = Map<string, Map<string, Leaf<T>>>;

interface Node<T> {
  readonly literals: Map<string, Node<T>>;
  wildcard: Node<T> | undefined;
  /** Templates ending in `**`: they take all remaining (non-empty) segments. */
  readonly deep: Terminals<T>;
  /** Templates ending exactly at this node. */
  readonly end: Terminals<T>;
}

export type TrieMatch<T> =
  | {
      readonly kind: "found";
      readonly value: T;
      readonly template: PathTemplate;
      readonly segments: readonly string[];
      /** Where an encoded slash separated two segments (RequestPath.encodedSlashes). */
      readonly encodedSlashes: readonly number[];
    }
  | { readonly kind: "method-not-allowed"; readonly allowed: readonly string[] }
  | { readonly kind: "not-found" };

/** A custom pattern with kind "*" accepts every HTTP method. */
export const ANY_METHOD = "*";

function newNode<T>(): Node<T> {
  return { literals: new Map(), wildcard: undefined, deep: new Map(), end: new Map() };
}

const NOT_FOUND = { kind: "not-found" } as const;

export class PathTrie<T> {
  private readonly root: Node<T> = newNode();

  /** Adds a template for an HTTP method; throws when the same shape and method is already taken. */
  add(httpMethod: string, template: PathTemplate, value: T): void {
    let node = this.root;
    let terminals = node.end;
    for (const segment of template.segments) {
      if (segment.kind === "deep-wildcard") {
        terminals = node.deep;
        break;
      }
      node = child(node, segment);
      terminals = node.end;
    }
    let byMethod = terminals.get(template.verb);
    if (byMethod === undefined) {
      byMethod = new Map();
      terminals.set(template.verb, byMethod);
    }
    const existing = byMethod.get(httpMethod);
    if (existing !== undefined) {
      throw new Error(`${httpMethod} ${template.source} conflicts with ${existing.template.source}`);
    }
    byMethod.set(httpMethod, { template, value });
  }

  /**
   * Matches a URL path (without query string) and HTTP method, the path in
   * its literal form (`%2F` as `/`) unless `expandEncodedSlashes` is false.
   */
  match(httpMethod: string, path: string, expandEncodedSlashes = true): TrieMatch<T> {
    let allowed: Set<string> | undefined;
    for (const candidate of splitRequestPath(path, expandEncodedSlashes)) {
      const search = new Search<T>(candidate.segments, candidate.verb, httpMethod);
      const leaf = search.walk(this.root, 0);
      if (leaf !== undefined) {
        return {
          kind: "found",
          value: leaf.value,
          template: leaf.template,
          segments: candidate.segments,
          encodedSlashes: candidate.encodedSlashes,
        };
      }
      if (search.allowed !== undefined) {
        allowed ??= new Set();
        for (const m of search.allowed) allowed.add(m);
      }
    }
    if (allowed === undefined) return NOT_FOUND;
    return { kind: "method-not-allowed", allowed: [...allowed].sort() };
  }
}

function child<T>(node: Node<T>, segment: TemplateSegment): Node<T> {
  if (segment.kind === "wildcard") {
    node.wildcard ??= newNode();
    return node.wildcard;
  }
  if (segment.kind === "literal") {
    let next = node.literals.get(segment.value);
    if (next === undefined) {
      next = newNode();
      node.literals.set(segment.value, next);
    }
    return next;
  }
  throw new Error(`"**" has no child segments`);
}

class Search<T> {
  /** Methods of every template whose path matched, for a 405's Allow header. */
  allowed: Set<string> | undefined;

  constructor(
    private readonly segments: readonly string[],
    private readonly verb: string,
    private readonly method: string,
  ) {}

  walk(node: Node<T>, i: number): Leaf<T> | undefined {
    const segments = this.segments;
    if (i === segments.length) return this.pick(node.end);
    const segment = segments[i] ?? "";
    // An empty segment (`//`, trailing slash) never matches anything.
    if (segment === "") return undefined;
    if (node.literals.size > 0) {
      const literal = percentDecode(segment);
      const next = literal === undefined ? undefined : node.literals.get(literal);
      if (next !== undefined) {
        const found = this.walk(next, i + 1);
        if (found !== undefined) return found;
      }
    }
    if (node.wildcard !== undefined) {
      const found = this.walk(node.wildcard, i + 1);
      if (found !== undefined) return found;
    }
    if (node.deep.size > 0 && this.restIsNonEmpty(i)) return this.pick(node.deep);
    return undefined;
  }

  private restIsNonEmpty(i: number): boolean {
    for (let j = i; j < this.segments.length; j++) if (this.segments[j] === "") return false;
    return true;
  }

  private pick(terminals: Terminals<T>): Leaf<T> | undefined {
    const byMethod = terminals.get(this.verb);
    if (byMethod === undefined) return undefined;
    const leaf = byMethod.get(this.method) ?? byMethod.get(ANY_METHOD);
    if (leaf !== undefined) return leaf;
    this.allowed ??= new Set();
    for (const m of byMethod.keys()) this.allowed.add(m);
    return undefined;
  }
}

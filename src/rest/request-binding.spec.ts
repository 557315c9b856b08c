import { create, toBinary, type Message } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  GroupsService,
  ListGroupsRequestSchema,
  type ListGroupsRequest,
  type UpdateGroupRequest,
} from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { FieldLookup } from "./field-lookup.js";
import { RequestBinder } from "./request-binding.js";
import { RouteTable } from "./route-table.js";
import {
  Color,
  ThingService,
  type ArchiveThingRequest,
  type BatchCreateThingsRequest,
  type SetTagsRequest,
  type Thing,
  type UpdateThingRequest,
} from "../../gen/resttest/v1/kitchen_sink_pb.js";

const table = new RouteTable([GroupsService, ThingService], "localhost");
const binder = new RequestBinder(new FieldLookup(), undefined);

/** Binds `METHOD /path?query` with an optional JSON body text. */
function bind<T extends Message>(method: string, url: string, body?: string | Uint8Array): T {
  const q = url.indexOf("?");
  const path = q === -1 ? url : url.slice(0, q);
  const m = table.match(method, path);
  if (m.kind !== "found") throw new Error(`${method} ${path}: ${m.kind}`);
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  return binder.bind({
    route: m.route,
    captures: m.captures,
    query: q === -1 ? "" : url.slice(q + 1),
    body: m.route.body.kind === "none" ? undefined : (bytes ?? new Uint8Array()),
  }) as T;
}

/** The single BadRequest violation of the INVALID_ARGUMENT that `fn` throws. */
function violation(fn: () => unknown): { field: string; description: string } {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof ConnectError)) throw e;
    expect(e.code).toBe(Code.InvalidArgument);
    const badRequest = e.findDetails(BadRequestSchema)[0];
    const v = badRequest?.fieldViolations[0];
    if (v === undefined) throw new Error(`no field violation in ${e.message}`);
    expect(e.rawMessage).toBe(`Invalid argument: ${v.field}: ${v.description}`);
    return { field: v.field, description: v.description };
  }
  throw new Error("expected INVALID_ARGUMENT, nothing was thrown");
}

describe("query parameters", () => {
  it("fill the List request, nested by dots, under proto and JSON names", () => {
    const req = bind<ListGroupsRequest>(
      "GET",
      "/iam/v2beta1/groups?page_size=5&pageToken=t&uidp.descendants_of=r1&uidp.childrenOf=r2&uidp.ids=a&uidp.ids=b&orderBy=name+desc&skip=2",
    );
    expect(toBinary(ListGroupsRequestSchema, req)).toEqual(
      toBinary(
        ListGroupsRequestSchema,
        create(ListGroupsRequestSchema, {
          pageSize: 5,
          pageToken: "t",
          orderBy: "name desc",
          skip: 2,
          uidp: { descendantsOf: "r1", childrenOf: "r2", ids: ["a", "b"] },
        }),
      ),
    );
  });

  it("convert every scalar kind, enums, repeated values and well-known types", () => {
    const thing = bind<Thing>(
      "GET",
      "/v1/things/t1?count=-5&big=-9007199254740993&small=4294967295&flag=true&ratio=1.5e2&approx=2.5" +
        "&data=aGk%3D&color=RED&tags=a&tags=b&numbers=1&numbers=-2&colors=GREEN&colors=1" +
        "&claim_match.issuer=iss&claimMatch.subject=sub&when=2024-01-02T03:04:05.678Z&wrapped=9" +
        "&mask=name,claimMatch.issuer&signed_big=-3&ubig=18446744073709551615&maybe=",
    );
    expect(thing.name).toBe("t1");
    expect(thing.count).toBe(-5);
    expect(thing.big).toBe(-9007199254740993n);
    expect(thing.small).toBe(4294967295);
    expect(thing.flag).toBe(true);
    expect(thing.ratio).toBe(150);
    expect(thing.approx).toBe(2.5);
    expect(new TextDecoder().decode(thing.data)).toBe("hi");
    expect(thing.color).toBe(Color.RED);
    expect(thing.tags).toEqual(["a", "b"]);
    expect(thing.numbers).toEqual([1n, -2n]);
    expect(thing.colors).toEqual([Color.GREEN, Color.RED]);
    expect(thing.claimMatch?.issuer).toBe("iss");
    expect(thing.claimMatch?.subject).toBe("sub");
    expect(thing.when).toEqual(timestampFromDate(new Date("2024-01-02T03:04:05.678Z")));
    expect(thing.wrapped).toBe(9); // wrappers are unwrapped in protobuf-es
    expect(thing.mask?.paths).toEqual(["name", "claim_match.issuer"]);
    expect(thing.signedBig).toBe(-3n);
    expect(thing.ubig).toBe(18446744073709551615n);
    // proto3 optional: present even when empty.
    expect(thing.maybe).toBe("");
  });

  it("accept enum numbers and special floats", () => {
    const thing = bind<Thing>("GET", "/v1/things/t1?color=2&ratio=-Infinity&approx=NaN&flag=false");
    expect(thing.color).toBe(Color.GREEN);
    expect(thing.ratio).toBe(-Infinity);
    expect(thing.approx).toBeNaN();
    expect(thing.flag).toBe(false);
  });

  it("take a FieldMask as comma-separated JSON or proto names", () => {
    const json = bind<UpdateThingRequest>("PATCH", "/v1/things/t1?updateMask=name,claimMatch.issuer,byKey", "{}");
    expect(json.updateMask?.paths).toEqual(["name", "claim_match.issuer", "by_key"]);
    const proto = bind<UpdateThingRequest>("PATCH", "/v1/things/t1?update_mask=claim_match.issuer,%20count", "{}");
    expect(proto.updateMask?.paths).toEqual(["claim_match.issuer", "count"]);
    const star = bind<UpdateThingRequest>("PATCH", "/v1/things/t1?updateMask=*", '{"count": 1}');
    expect(star.updateMask?.paths).toEqual(["*"]);
  });

  it.each([
    ["pageSize=abc", "pageSize", "must be a 32-bit integer"],
    ["page_size=1.5", "page_size", "must be a 32-bit integer"],
    ["pageSize=2147483648", "pageSize", "must be a 32-bit integer"],
    ["pageSize=", "pageSize", "must be a 32-bit integer"],
    ["pageSize=1&page_size=2", "page_size", "is given more than once"],
    ["nope=1", "nope", 'is not a known query parameter: platform.iam.v2beta1.ListGroupsRequest has no field "nope"'],
    ["uidp.nope=1", "uidp.nope", 'is not a known query parameter: platform.common.v1.UIDPFilter has no field "nope"'],
    ["uidp=1", "uidp", "is a message: set its fields instead, e.g. uidp.ancestorsOf"],
    ["name.x=1", "name.x", "is not a known query parameter: name has no fields"],
  ])("reject %j on List", (query, field, description) => {
    expect(violation(() => bind("GET", `/iam/v2beta1/groups?${query}`))).toEqual({ field, description });
  });

  it.each([
    ["flag=yes", "flag", "must be a boolean (true or false)"],
    ["color=BLUE", "color", "must be a value of Color (name or number): COLOR_UNSPECIFIED, RED, GREEN"],
    ["small=-1", "small", "must be an unsigned 32-bit integer"],
    ["big=9223372036854775808", "big", "must be a 64-bit integer"],
    ["ubig=-1", "ubig", "must be an unsigned 64-bit integer"],
    ["approx=1e39", "approx", "must be a 32-bit floating-point number"],
    ["ratio=1.2.3", "ratio", "must be a number"],
    ["data=!!", "data", "must be base64-encoded bytes"],
    ["when=yesterday", "when", "must be an RFC 3339 timestamp such as 2024-01-02T15:04:05Z"],
    ["wrapped=x", "wrapped", "must be a 32-bit integer"],
    ["mask=a,,b", "mask", "must be a comma-separated list of field paths"],
    ["numbers=1&numbers=x", "numbers", "must be a 64-bit integer"],
    ["inners.issuer=x", "inners.issuer", "is a list of messages, which cannot be set in the query string"],
    ["byKey.x=1", "byKey.x", "is a map, which cannot be set in the query string"],
    ["meta=x", "meta", "cannot be set from URL text (google.protobuf.Struct)"],
    ["name=other", "name", "is set by the URL path"],
  ])("reject %j on GetThing", (query, field, description) => {
    expect(violation(() => bind("GET", `/v1/things/t1?${query}`))).toEqual({ field, description });
  });

  it("bind a name the same way every time, per request type, and refuse an unknown or repeated one every time", () => {
    for (let i = 0; i < 2; i++) {
      const req = bind<ListGroupsRequest>("GET", `/iam/v2beta1/groups?name=n${i}&page_size=${i + 2}&uidp.children_of=r${i}`);
      expect([req.name, req.pageSize, req.uidp?.childrenOf]).toEqual([`n${i}`, i + 2, `r${i}`]);
      // The same names on another request type are that type's fields, or none.
      expect(violation(() => bind("GET", "/v1/things/t1?name=other"))).toEqual({ field: "name", description: "is set by the URL path" });
      expect(violation(() => bind("GET", "/v1/things/t1?page_size=1")).description).toMatch(/^is not a known query parameter/);
      expect(violation(() => bind("GET", "/iam/v2beta1/groups?nope=1")).field).toBe("nope");
      expect(violation(() => bind("GET", "/iam/v2beta1/groups?page_size=1&pageSize=2"))).toEqual({
        field: "pageSize",
        description: "is given more than once",
      });
    }
  });

  it("may not set what the body binds", () => {
    expect(violation(() => bind("PATCH", "/v1/things/t1?thing.count=1", "{}"))).toEqual({
      field: "thing.count",
      description: "is set by the request body",
    });
    expect(violation(() => bind("POST", "/v1/p:batchCreate?parent=x", "{}"))).toEqual({
      field: "parent",
      description: "is not allowed: this method reads every field from the body",
    });
  });
});

describe("path variables", () => {
  it("set nested fields and multi-segment captures", () => {
    const thing = bind<Thing>("GET", "/v1/issuers/acme%20corp/things/t%3A1");
    expect(thing.claimMatch?.issuer).toBe("acme corp");
    expect(thing.name).toBe("t:1");
    const deep = bind<Thing>("GET", "/v1/things/a/b%2Fc/d%20e");
    expect(deep.name).toBe("a/b/c/d e");
  });

  it("override the same field in the body", () => {
    const req = bind<UpdateThingRequest>("PATCH", "/v1/things/t1", '{"name": "things/other", "count": 3}');
    expect(req.thing?.name).toBe("things/t1");
    expect(req.thing?.count).toBe(3);
    const batch = bind<BatchCreateThingsRequest>("POST", "/v1/orgs/o:batchCreate", '{"parent": "elsewhere", "things": [{"name": "a"}]}');
    expect(batch.parent).toBe("orgs/o");
    expect(batch.things.map((t) => t.name)).toEqual(["a"]);
  });

  it("reject malformed percent-encoding, naming the field", () => {
    expect(violation(() => bind("GET", "/v1/issuers/%E0%A4%A/things/t"))).toEqual({
      field: "claimMatch.issuer",
      description: "is not valid percent-encoded UTF-8",
    });
  });
});

describe("request bodies", () => {
  it('decode body: "*" into the whole request', () => {
    const req = bind<ArchiveThingRequest>("POST", "/v1/things/t1:archive", '{"reason": "old"}');
    expect(req.name).toBe("t1");
    expect(req.reason).toBe("old");
  });

  it('decode body: "<field>" for a non-message field', () => {
    const req = bind<SetTagsRequest>("PUT", "/v1/things/t1/tags", '["a", "b"]');
    expect(req.tags).toEqual(["a", "b"]);
    expect(violation(() => bind("PUT", "/v1/things/t1/tags", '{"a": 1}'))).toEqual({
      field: "tags",
      description: "must be a JSON array",
    });
  });

  it("leave the body field unset for an empty body", () => {
    const req = bind<UpdateThingRequest>("PATCH", "/v1/things/t1", "  ");
    expect(req.thing?.name).toBe("things/t1");
    expect(req.thing?.count).toBe(0);
  });

  it.each([
    ['{"count": ', "body", /^is not valid JSON: /],
    ['{"nope": 1}', "thing.nope", /^is not a field of resttest\.v1\.Thing$/],
    ['{"count": "x"}', "thing.count", /^must be a 32-bit integer$/],
    ['{"count": 1.5}', "thing.count", /^must be a 32-bit integer$/],
    ['{"claimMatch": {"issuer": 5}}', "thing.claimMatch.issuer", /^must be a string$/],
    ['{"claim_match": {"deeper": {"bogus": true}}}', "thing.claim_match.deeper.bogus", /^is not a field of resttest\.v1\.Inner$/],
    ['{"claimMatch": "x"}', "thing.claimMatch", /^must be a JSON object$/],
    ['{"tags": ["a", 2]}', "thing.tags[1]", /^must be a string$/],
    ['{"tags": "a"}', "thing.tags", /^must be a JSON array$/],
    ['{"inners": [{"issuer": "a"}, {"subject": false}]}', "thing.inners[1].subject", /^must be a string$/],
    ['{"byKey": {"k": {"x": 1}}}', "thing.byKey.k.x", /^is not a field of resttest\.v1\.Inner$/],
    ['{"byNum": {"one": "x"}}', "thing.byNum.one", /^has an invalid key: must be a 32-bit integer$/],
    ['{"limits": {"a": "many"}}', "thing.limits.a", /^must be a 32-bit integer$/],
    ['{"when": "yesterday"}', "thing.when", /^must be an RFC 3339 timestamp/],
    ['{"color": "BLUE"}', "thing.color", /^must be a value of Color/],
    ['{"flag": "true"}', "thing.flag", /^must be a boolean/],
    // Two members of one oneof with values: the second is named (an empty one would be dropped).
    ['{"chosen": {}, "other": "x"}', "thing.other", /^cannot be given with chosen: they are alternatives/],
    ["[1]", "thing", /^must be a JSON object$/],
    ["null", "", null],
  ])("reject %s naming the field", (body, field, description) => {
    if (description === null) {
      // JSON null for the body field means "not set", which is fine.
      expect(bind<UpdateThingRequest>("PATCH", "/v1/things/t1", body).thing?.name).toBe("things/t1");
      return;
    }
    const v = violation(() => bind("PATCH", "/v1/things/t1", body));
    expect(v.field).toBe(field);
    expect(v.description).toMatch(description);
  });

  it("drop a oneof's members given empty beside the one in use, and keep them in the implied mask", () => {
    const req = bind<UpdateThingRequest>("PATCH", "/v1/things/t1", '{"chosen": {"issuer": "i"}, "other": ""}');
    expect(req.thing?.choice).toMatchObject({ case: "chosen", value: { issuer: "i" } });
    expect(req.updateMask?.paths.sort()).toEqual(["chosen.issuer", "other"]);
    expect(bind<UpdateThingRequest>("PATCH", "/v1/things/t1", '{"chosen": null, "other": "x"}').thing?.choice).toEqual({
      case: "other",
      value: "x",
    });
  });

  it('reject a non-object body for body: "*"', () => {
    expect(violation(() => bind("POST", "/v1/p:batchCreate", "[]"))).toEqual({ field: "body", description: "must be a JSON object" });
    expect(violation(() => bind("POST", "/v1/p:batchCreate", '{"things": [{"count": true}]}'))).toEqual({
      field: "things[0].count",
      description: "must be a 32-bit integer",
    });
  });

  it("reject invalid UTF-8", () => {
    expect(violation(() => bind("PATCH", "/v1/things/t1", new Uint8Array([0x7b, 0xff, 0x7d])))).toEqual({
      field: "body",
      description: "is not valid UTF-8",
    });
  });
});

describe("implicit update mask", () => {
  it("lists the fields present in the body, even empty or false, as proto names", () => {
    const req = bind<UpdateThingRequest>(
      "PATCH",
      "/v1/things/t1",
      JSON.stringify({
        count: 0,
        flag: false,
        description: undefined,
        claimMatch: { issuer: "i", deeper: { subject: "" } },
        when: "2024-01-02T03:04:05Z",
        byKey: {},
        limits: { a: 1 },
        inners: [],
        chosen: {},
        maybe: null,
        signed_big: "1",
      }),
    );
    expect(req.updateMask?.paths).toEqual([
      "count",
      "flag",
      "claim_match.issuer",
      "claim_match.deeper.subject",
      "when",
      "by_key",
      "limits",
      "inners",
      "chosen",
      "maybe",
      "signed_big",
    ]);
  });

  it("uses the field's own path for an empty object", () => {
    const req = bind<UpdateThingRequest>("PATCH", "/v1/things/t1", '{"claim_match": {}}');
    expect(req.updateMask?.paths).toEqual(["claim_match"]);
  });

  it("is present and empty for an empty body", () => {
    const req = bind<UpdateThingRequest>("PATCH", "/v1/things/t1");
    expect(req.updateMask).toBeDefined();
    expect(req.updateMask?.paths).toEqual([]);
  });

  it("does not include the field the path sets", () => {
    const req = bind<UpdateGroupRequest>("PATCH", "/iam/v2beta1/groups/a/b", '{"description": ""}');
    expect(req.group?.uid).toBe("a/b");
    expect(req.updateMask?.paths).toEqual(["description"]);
  });

  it("leaves a mask the caller gave unchanged", () => {
    const req = bind<UpdateGroupRequest>("PATCH", "/iam/v2beta1/groups/a?updateMask=name", '{"name": "n", "description": "d"}');
    expect(req.updateMask?.paths).toEqual(["name"]);
  });

  it("is not added where the body is the whole request", () => {
    const req = bind<BatchCreateThingsRequest>("POST", "/v1/p:batchCreate", '{"things": []}');
    expect(req.parent).toBe("p");
  });
});

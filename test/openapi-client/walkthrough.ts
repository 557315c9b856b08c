// The README's REST walkthrough ("Calling the API", "Identities, roles and role bindings")
// written against a client generated from the live /openapi.json, as someone else would
// write it: openapi-typescript's `paths`, openapi-fetch's typed calls, path parameters
// passed as values (the client percent-encodes them, so a child uid goes out as
// `<org>%2F<child>`). test/e2e/generated-client.spec.ts generates `./schema.js` beside a
// copy of this file, type-checks both, then runs `walkthrough` against a test server. It is
// not part of the project's own type check: `./schema.js` exists only in that directory.

import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type Group = components["schemas"]["platform.iam.v2beta1.Group"];
type Status = components["schemas"]["google.rpc.Status"];

export interface WalkthroughResult {
  /** One line per call: method, path template, HTTP status and what came back. */
  readonly transcript: string[];
  readonly org: Group;
  readonly child: Group;
  readonly pagedNames: string[];
}

/** Throws with the server's google.rpc.Status when a call did not succeed. */
function must<T>(step: string, result: { data?: T; error?: Status | unknown; response: Response }): T {
  if (result.data === undefined || !result.response.ok) {
    throw new Error(`${step}: HTTP ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

export async function walkthrough(baseUrl: string, token: string, fetchImpl: typeof fetch = fetch): Promise<WalkthroughResult> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` }, fetch: fetchImpl });
  const transcript: string[] = [];
  const note = (line: string): void => {
    transcript.push(line);
  };
  const suffix = Math.random().toString(16).slice(2, 8);

  // An organization (a root group), then a child group: the parent goes in the path.
  const org = must(
    "create organization",
    await api.POST("/iam/v2beta1/groups", { body: { name: `acme-${suffix}`, description: "our organization" } }),
  );
  note(`POST /iam/v2beta1/groups → ${org.uid} (${org.name})`);
  const child = must(
    "create child group",
    await api.POST("/iam/v2beta1/groups/{uid}", { params: { path: { uid: org.uid } }, body: { name: "platform team" } }),
  );
  note(`POST /iam/v2beta1/groups/{uid} uid=${org.uid} → ${child.uid} (${child.name})`);
  for (const name of ["alpha team", "beta team"]) {
    must("create sibling", await api.POST("/iam/v2beta1/groups/{uid}", { params: { path: { uid: org.uid } }, body: { name } }));
  }

  // List, scoped, ordered and paged: one group a page, following nextPageToken.
  const pagedNames: string[] = [];
  let pageToken = "";
  for (let page = 1; page <= 10; page++) {
    const list = must(
      "list groups",
      await api.GET("/iam/v2beta1/groups", {
        params: { query: { "uidp.descendants_of": org.uid, order_by: "name desc", page_size: 1, page_token: pageToken } },
      }),
    );
    pagedNames.push(...list.groups.map((g) => g.name));
    note(`GET /iam/v2beta1/groups page ${page} → [${list.groups.map((g) => g.name).join(", ")}] totalCount=${list.totalCount}`);
    pageToken = list.nextPageToken;
    if (pageToken === "") break;
  }

  // Get, update (only what is in the body, or exactly what update_mask names) and delete the child by its uid.
  const got = must("get child", await api.GET("/iam/v2beta1/groups/{uid}", { params: { path: { uid: child.uid } } }));
  note(`GET /iam/v2beta1/groups/{uid} uid=${child.uid} → ${got.name}`);
  const patched = must(
    "patch child",
    await api.PATCH("/iam/v2beta1/groups/{uid}", { params: { path: { uid: child.uid } }, body: { description: "renamed" } }),
  );
  note(`PATCH /iam/v2beta1/groups/{uid} uid=${child.uid} → description "${patched.description}"`);
  const masked = must(
    "patch child with update_mask",
    await api.PATCH("/iam/v2beta1/groups/{uid}", {
      params: { path: { uid: child.uid }, query: { update_mask: "description" } },
      body: {},
    }),
  );
  note(`PATCH /iam/v2beta1/groups/{uid}?update_mask=description → description "${masked.description}"`);
  const notEmpty = await api.DELETE("/iam/v2beta1/groups/{uid}", { params: { path: { uid: org.uid } } });
  if (notEmpty.error === undefined) throw new Error("deleting an organization with children succeeded");
  note(`DELETE /iam/v2beta1/groups/{uid} uid=${org.uid} → HTTP ${notEmpty.response.status}, code ${notEmpty.error.code}`);

  // An identity for a GitHub Actions workflow, found again by a scoped list.
  const identity = must(
    "create identity",
    await api.POST("/iam/v2beta1/identities/{uid}", {
      params: { path: { uid: org.uid } },
      body: {
        name: "deployer",
        description: "CI",
        claimMatch: { issuer: "https://token.actions.githubusercontent.com", subject: "repo:acme/app:ref:refs/heads/main" },
      },
    }),
  );
  note(`POST /iam/v2beta1/identities/{uid} → ${identity.uid}`);
  const identities = must(
    "list identities",
    await api.GET("/iam/v2beta1/identities", { params: { query: { "uidp.children_of": org.uid, name: "deployer" } } }),
  );
  const id = identities.identities[0]?.uid ?? "";
  if (id !== identity.uid) throw new Error(`list identities found ${id}, not ${identity.uid}`);
  const fetched = must("get identity", await api.GET("/iam/v2beta1/identities/{uid}", { params: { path: { uid: id } } }));
  note(`GET /iam/v2beta1/identities/{uid} uid=${id} → ${fetched.name}`);

  // Roles: a built-in found by name, a custom role in the organization.
  const viewer = must("find viewer", await api.GET("/iam/v2beta1/roles", { params: { query: { name: "viewer" } } }));
  note(`GET /iam/v2beta1/roles?name=viewer → ${viewer.roles.map((r) => r.uid).join(", ")}`);
  const tagger = must(
    "create role",
    await api.POST("/iam/v2beta1/roles/{uid}", {
      params: { path: { uid: org.uid } },
      body: { name: "tagger", capabilities: ["tag.list", "tag.create"] },
    }),
  );
  note(`POST /iam/v2beta1/roles/{uid} → ${tagger.uid}`);

  // Role bindings: one, several at once, listed by identity; change one's role; delete it.
  const binding = must(
    "bind viewer",
    await api.POST("/iam/v2beta1/roleBindings/{uid}", { params: { path: { uid: org.uid } }, body: { identityUid: id, roleUid: "viewer" } }),
  );
  note(`POST /iam/v2beta1/roleBindings/{uid} → ${binding.uid} role ${binding.role?.uid}`);
  const batch = must(
    "batch bind",
    await api.POST("/iam/v2beta1/roleBindings/{parent}:batchCreate", {
      params: { path: { parent: org.uid } },
      body: {
        requests: [
          { identityUid: id, roleUid: "registry.pull" },
          { identityUid: id, roleUid: "editor" },
        ],
      },
    }),
  );
  note(`POST /iam/v2beta1/roleBindings/{parent}:batchCreate → ${batch.roleBindings.map((b) => b.role?.uid).join(", ")}`);
  const bindings = must(
    "list bindings",
    await api.GET("/iam/v2beta1/roleBindings", { params: { query: { identity: id, order_by: "create_time" } } }),
  );
  note(`GET /iam/v2beta1/roleBindings?identity=… → ${bindings.roleBindings.map((b) => b.role?.uid).join(", ")}`);
  const editor = must(
    "find editor binding",
    await api.GET("/iam/v2beta1/roleBindings", { params: { query: { identity: id, role: "editor" } } }),
  );
  const rb = editor.roleBindings[0]?.uid ?? "";
  const changed = must(
    "change role",
    await api.PATCH("/iam/v2beta1/roleBindings/{uid}", { params: { path: { uid: rb } }, body: { roleUid: "owner" } }),
  );
  note(`PATCH /iam/v2beta1/roleBindings/{uid} uid=${rb} → role ${changed.role?.uid}`);
  must("delete binding", await api.DELETE("/iam/v2beta1/roleBindings/{uid}", { params: { path: { uid: rb } } }));
  note(`DELETE /iam/v2beta1/roleBindings/{uid} uid=${rb} → {}`);

  // Finally the child group, by its uid.
  must("delete child", await api.DELETE("/iam/v2beta1/groups/{uid}", { params: { path: { uid: child.uid } } }));
  const gone = await api.GET("/iam/v2beta1/groups/{uid}", { params: { path: { uid: child.uid } } });
  note(`DELETE /iam/v2beta1/groups/{uid} uid=${child.uid} → {}; GET → HTTP ${gone.response.status}`);
  if (gone.response.status !== 404) throw new Error(`the deleted child answers ${gone.response.status}`);

  return { transcript, org, child: patched, pagedNames };
}

import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { API_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import { UIDPFilterSchema } from "../../gen/platform/common/v1/uidp_pb.js";
import { EventsService } from "../../gen/platform/events/v2beta1/events_pb.js";
import { GetGroupRequestSchema } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { RoleBindingSchema, RoleBindingsService } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { DeleteRootRoleBindingRequestSchema } from "../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { GetRepoRequestSchema, ReposService } from "../../gen/platform/registry/v2beta1/repos_pb.js";
import { AdvisoriesService } from "../../gen/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { standardMethodOf, uidKindOf } from "./index.js";

const field = (message: DescMessage, name: string): DescField => message.fields.find((f) => f.name === name)!;

describe("standardMethodOf", () => {
  it("tells standard methods by their names, batches included; custom and streaming methods are none", () => {
    expect(ReposService.methods.map(standardMethodOf)).toEqual(["List", "Get", "Create", "Update", "Delete"]);
    expect(standardMethodOf(RoleBindingsService.method.batchCreateRoleBindings)).toBe("BatchCreate");
    expect(standardMethodOf(AdvisoriesService.method.importAdvisories)).toBeUndefined();
    expect(standardMethodOf(EventsService.method.watchEvents)).toBeUndefined();
  });
});

describe("uid kinds (option platform.common.v1.uid_kind)", () => {
  it("are read from the field", () => {
    expect(uidKindOf(field(GetGroupRequestSchema, "uid"))).toBe("group");
    expect(uidKindOf(field(GetRepoRequestSchema, "uid"))).toBe("child");
    expect(uidKindOf(field(DeleteRootRoleBindingRequestSchema, "uid"))).toBe("rootRoleBinding");
    expect(uidKindOf(field(RoleBindingSchema, "role_uid"))).toBe("role");
    expect(uidKindOf(field(UIDPFilterSchema, "ids"))).toBe("any");
    expect(uidKindOf(field(RoleBindingSchema, "create_time"))).toBeUndefined();
  });

  // A uid field without the option would pass the request check unshaped
  // (docs/security.md, "Input"): every one a request can carry declares it.
  it("are declared on every uid field a request can carry", () => {
    const reachable = new Set<DescMessage>();
    const visit = (message: DescMessage) => {
      if (reachable.has(message) || message.typeName.startsWith("google.protobuf.")) return;
      reachable.add(message);
      for (const f of message.fields) if (f.message) visit(f.message);
    };
    for (const service of API_SERVICE_DESCRIPTORS) for (const method of service.methods) visit(method.input);
    const looksLikeUid = (f: DescField) =>
      (f.fieldKind === "scalar" || f.fieldKind === "list") &&
      f.scalar === ScalarType.STRING &&
      /^(uid|ids?|parent|group|role|identity|default_role)$|_(uid|of)$|^in_root$/.test(f.name);
    const undeclared = [...reachable].flatMap((m) =>
      m.fields.filter((f) => looksLikeUid(f) && !uidKindOf(f)).map((f) => `${m.typeName}.${f.name}`),
    );
    expect(undeclared).toEqual([]);
  });
});

import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { IdentitiesService, IdentitySchema, type Identity } from "../../../gen/platform/iam/v1/identities_pb.js";
import {
  IdentitiesService as V2IdentitiesService,
  type ClaimMatch as V2ClaimMatch,
  type Identity as V2Identity,
} from "../../../gen/platform/iam/v2beta1/identities_pb.js";
import type { ServiceContext } from "../context.js";
import { identitiesService } from "../iam/identities.js";
import { inProcess } from "./in-process.js";
import { listAll } from "./list-all.js";
import { REPLACE_ALL, v1Record } from "./shape.js";

type Claims = Pick<V2ClaimMatch, "issuer" | "subject" | "issuerPattern" | "subjectPattern" | "audience" | "audiencePattern">;

// claim_match has the same fields in both versions.
const claims = (c: Claims | undefined): Claims => ({
  issuer: c?.issuer ?? "",
  subject: c?.subject ?? "",
  issuerPattern: c?.issuerPattern ?? "",
  subjectPattern: c?.subjectPattern ?? "",
  audience: c?.audience ?? "",
  audiencePattern: c?.audiencePattern ?? "",
});

const toV1 = (i: V2Identity): Identity =>
  create(IdentitySchema, { ...v1Record(i), name: i.name, description: i.description, lastSeenAt: i.lastSeenTime, claimMatch: claims(i.claimMatch) });

const toV2 = (i = create(IdentitySchema)) => ({ uid: i.id, name: i.name, description: i.description, claimMatch: claims(i.claimMatch) });

export function v1IdentitiesService(ctx: ServiceContext): ServiceImpl<typeof IdentitiesService> {
  const v2 = inProcess(V2IdentitiesService, identitiesService(ctx));
  return {
    listIdentities: (req, context) =>
      listAll(req, (page) => v2.listIdentities({ ...page, name: req.name }, context), (res) => res.identities.map(toV1)),
    createIdentity: async (req, context) => toV1(await v2.createIdentity({ parent: req.parent, identity: toV2(req.identity) }, context)),
    updateIdentity: async (req, context) => toV1(await v2.updateIdentity({ identity: toV2(req.identity), updateMask: REPLACE_ALL }, context)),
    deleteIdentity: (req, context) => v2.deleteIdentity({ uid: req.id }, context),
  };
}

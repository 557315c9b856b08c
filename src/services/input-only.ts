import { clearField, getOption, isFieldSet, type DescField, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";

type AnyMessage = MessageShape<DescMessage>;

/**
 * Clears every INPUT_ONLY field (google.api.field_behavior), at any depth,
 * so that a message built from storage can be returned: such fields (client
 * secrets, ttls) are accepted in requests and never appear in responses.
 * Mutates and returns `message`.
 */
export function withoutInputOnly<Desc extends DescMessage>(desc: Desc, message: MessageShape<Desc>): MessageShape<Desc> {
  for (const field of desc.fields) {
    if (!isFieldSet(message, field)) continue;
    if (getOption(field, field_behavior).includes(FieldBehavior.INPUT_ONLY)) {
      clearField(message, field);
      continue;
    }
    for (const nested of nestedMessages(message, field)) withoutInputOnly(nested.desc, nested.message);
  }
  return message;
}

function nestedMessages(message: AnyMessage, field: DescField): { desc: DescMessage; message: AnyMessage }[] {
  const record = message as unknown as Record<string, unknown>;
  switch (field.fieldKind) {
    case "message": {
      const value = field.oneof ? (record[field.oneof.localName] as { value: unknown }).value : record[field.localName];
      return [{ desc: field.message, message: value as AnyMessage }];
    }
    case "list":
      return field.listKind === "message" ? (record[field.localName] as AnyMessage[]).map((m) => ({ desc: field.message, message: m })) : [];
    case "map":
      return field.mapKind === "message"
        ? Object.values(record[field.localName] as Record<string, AnyMessage>).map((m) => ({ desc: field.message, message: m }))
        : [];
    default:
      return [];
  }
}

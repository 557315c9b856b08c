import { clearField, getOption, isFieldSet, type DescField, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";

type AnyMessage = MessageShape<DescMessage>;

/** For one message type: the INPUT_ONLY fields to clear, and the message fields that may hold some deeper down. */
interface Plan {
  clear: DescField[];
  descend: DescField[];
}

// undefined: nothing INPUT_ONLY can be reached from the type (most types): the walk costs nothing.
const plans = new WeakMap<DescMessage, Plan | undefined>();

const isInputOnly = (field: DescField) => getOption(field, field_behavior).includes(FieldBehavior.INPUT_ONLY);

/** The message type a field holds (singular, list element or map value), if any. */
function messageOf(field: DescField): DescMessage | undefined {
  if (field.fieldKind === "message") return field.message;
  if (field.fieldKind === "list" && field.listKind === "message") return field.message;
  if (field.fieldKind === "map" && field.mapKind === "message") return field.message;
  return undefined;
}

/**
 * Plans for `root` and every type reachable from it, made once: which types
 * can hold an INPUT_ONLY field at some depth (recursive types included: the
 * answer is propagated until nothing changes).
 */
function planFor(root: DescMessage): Plan | undefined {
  if (plans.has(root)) return plans.get(root);
  const types: DescMessage[] = [];
  const seen = new Set<DescMessage>();
  const visit = (desc: DescMessage) => {
    if (seen.has(desc) || plans.has(desc)) return;
    seen.add(desc);
    types.push(desc);
    for (const field of desc.fields) {
      const child = messageOf(field);
      if (child) visit(child);
    }
  };
  visit(root);
  const reaches = new Set(types.filter((desc) => desc.fields.some(isInputOnly)));
  for (let changed = true; changed; ) {
    changed = false;
    for (const desc of types) {
      if (reaches.has(desc)) continue;
      if (
        desc.fields.some((f) => {
          const child = messageOf(f);
          return child !== undefined && (reaches.has(child) || plans.get(child) !== undefined);
        })
      ) {
        reaches.add(desc);
        changed = true;
      }
    }
  }
  for (const desc of types) {
    if (!reaches.has(desc)) {
      plans.set(desc, undefined);
      continue;
    }
    const clear = desc.fields.filter(isInputOnly);
    const descend = desc.fields.filter((f) => {
      const child = messageOf(f);
      return !clear.includes(f) && child !== undefined && (reaches.has(child) || plans.get(child) !== undefined);
    });
    plans.set(desc, { clear, descend });
  }
  return plans.get(root);
}

/**
 * Clears every INPUT_ONLY field (google.api.field_behavior), at any depth:
 * such fields (client secrets, ttls) are accepted in requests and never
 * appear in responses. The call pipeline applies it to every answer
 * (src/server/call-pipeline.ts), so a new secret field cannot leak because a
 * service forgot it. Mutates and returns `message`.
 */
export function withoutInputOnly<Desc extends DescMessage>(desc: Desc, message: MessageShape<Desc>): MessageShape<Desc> {
  const plan = planFor(desc);
  if (plan) strip(plan, message);
  return message;
}

function strip(plan: Plan, message: AnyMessage): void {
  for (const field of plan.clear) if (isFieldSet(message, field)) clearField(message, field);
  for (const field of plan.descend) {
    if (!isFieldSet(message, field)) continue;
    const child = planFor(messageOf(field)!);
    if (!child) continue;
    for (const nested of nestedMessages(message, field)) strip(child, nested);
  }
}

function nestedMessages(message: AnyMessage, field: DescField): AnyMessage[] {
  const record = message as unknown as Record<string, unknown>;
  switch (field.fieldKind) {
    case "message":
      return [(field.oneof ? (record[field.oneof.localName] as { value: unknown }).value : record[field.localName]) as AnyMessage];
    case "list":
      return record[field.localName] as AnyMessage[];
    case "map":
      return Object.values(record[field.localName] as Record<string, AnyMessage>);
    default:
      return [];
  }
}

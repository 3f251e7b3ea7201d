/**
 * A signoff catalog's write tools, read from the tool definitions signoff prints
 * (`signoff tools --format openai`, `--format openai-responses` or `--format mcp`; the server
 * has no endpoint for them). Each `request_<tool>_confirmation` definition names one write tool
 * and carries its strict JSON Schema; the adapters give the model that tool under its own name.
 */
export interface JsonSchemaObject {
  type: "object";
  properties?: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean;
  [keyword: string]: unknown;
}

export interface WriteToolSpec {
  /** The catalog's name of the write tool, e.g. `refund_order`. */
  name: string;
  /** The write tool's own description (without signoff's request-tool wording). */
  description: string;
  /** The strict JSON Schema of its arguments, as signoff validates them. */
  parameters: JsonSchemaObject;
  /** `none`, `reversible`, `external`, ... as the catalog declares it; undefined if not stated. */
  sideEffect: string | undefined;
}

const REQUEST_NAME = /^request_(.+)_confirmation$/;
/**
 * Properties signoff's request tools carry beside a write tool's own arguments (a mandate, a
 * superseded proposal). They are not the write tool's arguments: the adapters present the
 * write tool itself, so they are left out of its schema here.
 */
export const RESERVED_ARGUMENTS: readonly string[] = ["signoff_mandate_id", "signoff_supersedes"];
const OWN_DESCRIPTION = /confirm `[^`]+`: (.*?) The arguments are frozen/s;
const SIDE_EFFECT = /Side effect once executed: ([a-z_]+)/;

/** The write tools in `definitions` (any of the three formats), in their order. */
export function writeTools(definitions: unknown): WriteToolSpec[] {
  const list = Array.isArray(definitions)
    ? definitions
    : isObject(definitions) && Array.isArray(definitions["tools"])
      ? definitions["tools"]
      : undefined;
  if (list === undefined) {
    throw new TypeError("tool definitions are the JSON of `signoff tools --format openai|openai-responses|mcp`");
  }
  const found: WriteToolSpec[] = [];
  for (const entry of list) {
    const definition = isObject(entry) && isObject(entry["function"]) ? entry["function"] : entry;
    if (!isObject(definition) || typeof definition["name"] !== "string") {
      throw new TypeError("every tool definition needs a name");
    }
    const match = REQUEST_NAME.exec(definition["name"]);
    if (match === null) continue;
    const parameters = definition["parameters"] ?? definition["inputSchema"];
    if (!isObject(parameters) || parameters["type"] !== "object") {
      throw new TypeError(`${definition["name"]} has no object schema`);
    }
    const text = typeof definition["description"] === "string" ? definition["description"] : "";
    found.push({
      name: match[1] as string,
      description: OWN_DESCRIPTION.exec(text)?.[1] ?? text,
      parameters: withoutReserved(parameters as JsonSchemaObject),
      sideEffect: SIDE_EFFECT.exec(text)?.[1],
    });
  }
  if (found.length === 0) throw new TypeError("the definitions hold no request_<tool>_confirmation tool");
  return found;
}

function withoutReserved(schema: JsonSchemaObject): JsonSchemaObject {
  const properties = schema.properties;
  if (properties === undefined) return schema;
  const own = Object.fromEntries(
    Object.entries(properties).filter(([name]) => !RESERVED_ARGUMENTS.includes(name)),
  );
  const required = schema.required?.filter((name) => !RESERVED_ARGUMENTS.includes(name));
  return { ...schema, properties: own, ...(required === undefined ? {} : { required }) };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * A tool's input schema turned into form fields, and the checks a value must
 * pass before it is sent. Pure logic (no DOM): `components/schema-form.ts`
 * draws the fields and reads them back.
 *
 * Supported: strings, numbers, integers, booleans, enums, arrays of any of
 * these and nested objects. Anything else (`oneOf`, `$ref`, a missing type)
 * becomes a raw JSON field, and a root that is not an object with properties
 * makes the whole form a raw JSON editor.
 */

export type JsonSchema = Record<string, unknown>;

export type FieldKind = "string" | "number" | "integer" | "boolean" | "enum" | "array" | "object" | "json";

export interface Field {
  /** Property name (empty for the root and array items). */
  key: string;
  /** Dotted path for ids and error messages: `filters.tags[]`. */
  path: string;
  label: string;
  kind: FieldKind;
  required: boolean;
  description: string;
  schema: JsonSchema;
  /** enum: the allowed values. */
  options: unknown[];
  /** array: the field of one item. */
  items: Field | null;
  /** object: its properties in schema order. */
  properties: Field[];
}

/** A value that fails its schema, at `path` (empty: the whole arguments). */
export interface Problem {
  path: string;
  message: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function typeOf(schema: JsonSchema): string | null {
  const t = schema.type;
  if (typeof t === "string") return t;
  // ["string", "null"]: the non-null type.
  if (Array.isArray(t)) {
    const rest = t.filter((x) => x !== "null");
    return rest.length === 1 && typeof rest[0] === "string" ? rest[0] : null;
  }
  return null;
}

function kindOf(schema: JsonSchema): FieldKind {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return "enum";
  switch (typeOf(schema)) {
    case "string":
      return "string";
    case "number":
      return "number";
    case "integer":
      return "integer";
    case "boolean":
      return "boolean";
    case "array":
      return isObject(schema.items) ? "array" : "json";
    case "object":
      return isObject(schema.properties) ? "object" : "json";
    default:
      return "json";
  }
}

/** The field for `schema` found at `path` under property `key`. */
export function fieldFor(schema: unknown, key: string, path: string, required: boolean): Field {
  const s: JsonSchema = isObject(schema) ? schema : {};
  const kind = kindOf(s);
  const requiredList = Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === "string") : [];
  const properties =
    kind === "object" && isObject(s.properties)
      ? Object.entries(s.properties).map(([k, v]) =>
          fieldFor(v, k, path ? `${path}.${k}` : k, requiredList.includes(k)),
        )
      : [];
  return {
    key,
    path,
    label: typeof s.title === "string" ? s.title : key,
    kind,
    required,
    description: typeof s.description === "string" ? s.description : "",
    schema: s,
    options: kind === "enum" ? (s.enum as unknown[]) : [],
    items: kind === "array" ? fieldFor(s.items, "", `${path}[]`, true) : null,
    properties,
  };
}

/** The root field of a tool's input schema: an object, or one raw JSON field. */
export function formFor(inputSchema: unknown): Field {
  return fieldFor(inputSchema, "", "", true);
}

/** Parses the text of a number field; `null` for an empty one. */
export function parseNumber(text: string, integer: boolean): number | null | Problem {
  const t = text.trim();
  if (t === "") return null;
  const v = Number(t);
  if (!Number.isFinite(v)) return { path: "", message: `${JSON.stringify(t)} is not a number` };
  if (integer && !Number.isInteger(v)) return { path: "", message: `${t} is not a whole number` };
  return v;
}

/** Parses the text of a raw JSON field; `undefined` for an empty one. */
export function parseJson(text: string): unknown {
  const t = text.trim();
  if (t === "") return undefined;
  try {
    return JSON.parse(t) as unknown;
  } catch (e) {
    return { __invalid: e instanceof Error ? e.message : String(e) };
  }
}

/** True when `v` is the marker {@link parseJson} returns for invalid text. */
export function isInvalidJson(v: unknown): v is { __invalid: string } {
  return isObject(v) && typeof v.__invalid === "string" && Object.keys(v).length === 1;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

function typeMatches(t: string, v: unknown): boolean {
  switch (t) {
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number" && Number.isFinite(v);
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "boolean":
      return typeof v === "boolean";
    case "array":
      return Array.isArray(v);
    case "object":
      return isObject(v);
    case "null":
      return v === null;
    default:
      return true;
  }
}

/**
 * Checks `value` against the subset of JSON Schema a form can break: type,
 * enum, required, string length and pattern, number bounds, array length and
 * items, object properties and `additionalProperties: false`. The server
 * checks the rest.
 */
export function validate(schema: unknown, value: unknown, path = ""): Problem[] {
  if (!isObject(schema)) return [];
  const at = (message: string): Problem[] => [{ path, message }];
  if (isInvalidJson(value)) return at(`not valid JSON: ${value.__invalid}`);
  const t = schema.type;
  const types = typeof t === "string" ? [t] : Array.isArray(t) ? t.filter((x): x is string => typeof x === "string") : [];
  if (types.length > 0 && !types.some((x) => typeMatches(x, value))) {
    return at(`must be ${types.join(" or ")}, not ${describe(value)}`);
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    return at(`must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`);
  }
  const problems: Problem[] = [];
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength)
      problems.push({ path, message: `must be at least ${String(schema.minLength)} characters` });
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength)
      problems.push({ path, message: `must be at most ${String(schema.maxLength)} characters` });
    if (typeof schema.pattern === "string") {
      try {
        if (!new RegExp(schema.pattern, "u").test(value))
          problems.push({ path, message: `must match ${schema.pattern}` });
      } catch {
        // A pattern this engine cannot read is left to the server.
      }
    }
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum)
      problems.push({ path, message: `must be at least ${String(schema.minimum)}` });
    if (typeof schema.maximum === "number" && value > schema.maximum)
      problems.push({ path, message: `must be at most ${String(schema.maximum)}` });
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems)
      problems.push({ path, message: `needs at least ${String(schema.minItems)} items` });
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems)
      problems.push({ path, message: `takes at most ${String(schema.maxItems)} items` });
    value.forEach((item, i) => problems.push(...validate(schema.items, item, `${path}[${String(i)}]`)));
  }
  if (isObject(value)) {
    const props = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required : [];
    for (const key of required) {
      if (typeof key === "string" && !(key in value))
        problems.push({ path: path ? `${path}.${key}` : key, message: "is required" });
    }
    for (const [key, v] of Object.entries(value)) {
      const sub = path ? `${path}.${key}` : key;
      if (key in props) problems.push(...validate(props[key], v, sub));
      else if (schema.additionalProperties === false) problems.push({ path: sub, message: "is not a known argument" });
    }
  }
  return problems;
}

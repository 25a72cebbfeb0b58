import { describe, expect, it } from "vitest";
import { formFor, isInvalidJson, parseJson, parseNumber, validate } from "./schema-form";

const schema = {
  type: "object",
  properties: {
    message: { type: "string", description: "what to echo", minLength: 1 },
    count: { type: "integer", minimum: 1, maximum: 10 },
    ratio: { type: "number" },
    loud: { type: "boolean" },
    mode: { enum: ["plain", "json"] },
    tags: { type: "array", items: { type: "string" }, maxItems: 2 },
    filter: {
      type: "object",
      properties: { status: { type: "string" } },
      required: ["status"],
      additionalProperties: false,
    },
    anything: { oneOf: [{ type: "string" }, { type: "number" }] },
  },
  required: ["message"],
};

describe("formFor", () => {
  it("turns each property into the field of its type", () => {
    const root = formFor(schema);
    expect(root.kind).toBe("object");
    const kinds = Object.fromEntries(root.properties.map((f) => [f.key, f.kind]));
    expect(kinds).toEqual({
      message: "string",
      count: "integer",
      ratio: "number",
      loud: "boolean",
      mode: "enum",
      tags: "array",
      filter: "object",
      anything: "json",
    });
    const [message] = root.properties;
    expect(message).toMatchObject({ required: true, description: "what to echo", path: "message" });
    const tags = root.properties.find((f) => f.key === "tags");
    expect(tags?.items).toMatchObject({ kind: "string", path: "tags[]" });
    const filter = root.properties.find((f) => f.key === "filter");
    expect(filter?.properties[0]).toMatchObject({ key: "status", path: "filter.status", required: true });
    expect(root.properties.find((f) => f.key === "mode")?.options).toEqual(["plain", "json"]);
  });

  it("falls back to raw JSON for a root that is not an object with properties", () => {
    expect(formFor({ type: "object" }).kind).toBe("json");
    expect(formFor(undefined).kind).toBe("json");
    expect(formFor({ type: ["string", "null"] }).kind).toBe("string");
  });
});

describe("validate", () => {
  it("accepts a good value", () => {
    expect(
      validate(schema, { message: "hi", count: 3, tags: ["a"], filter: { status: "draft" }, mode: "json" }),
    ).toEqual([]);
  });

  it("names every problem by its path", () => {
    const problems = validate(schema, {
      count: 11,
      ratio: "x",
      mode: "xml",
      tags: ["a", 2, "c"],
      filter: { other: 1 },
    });
    expect(problems).toEqual([
      { path: "message", message: "is required" },
      { path: "count", message: "must be at most 10" },
      { path: "ratio", message: "must be number, not a string" },
      { path: "mode", message: 'must be one of "plain", "json"' },
      { path: "tags", message: "takes at most 2 items" },
      { path: "tags[1]", message: "must be string, not a number" },
      { path: "filter.status", message: "is required" },
      { path: "filter.other", message: "is not a known argument" },
    ]);
  });

  it("reports text that is not JSON instead of sending it", () => {
    const bad = parseJson("{nope");
    expect(isInvalidJson(bad)).toBe(true);
    expect(validate({ type: "object" }, bad)[0]?.message).toMatch(/^not valid JSON/);
    expect(parseJson("  ")).toBeUndefined();
    expect(parseJson('{"a":1}')).toEqual({ a: 1 });
  });

  it("parses numbers strictly", () => {
    expect(parseNumber("", false)).toBeNull();
    expect(parseNumber("2.5", false)).toBe(2.5);
    expect(parseNumber("2.5", true)).toEqual({ path: "", message: "2.5 is not a whole number" });
    expect(parseNumber("ten", false)).toEqual({ path: "", message: '"ten" is not a number' });
  });
});

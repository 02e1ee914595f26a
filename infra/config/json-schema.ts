/**
 * The JSON Schema of a stack file (`stacks/Pulumi.<stack>.yaml`), derived from the declaration
 * of the stack config (./stack-keys.ts). Stack files name it in their first line
 * (`# yaml-language-server: $schema=stack-config.schema.json`), so an editor with the YAML
 * language server marks an unknown key or a value of the wrong type while it is typed; `verify`
 * reports the same and everything the schema cannot say (addresses, names, rules across keys).
 *
 * Pulumi writes a secret as `{ secure: <ciphertext> }` in place of its value, at the top of a
 * key or at any path set with `--secret --path`, so every value may be one. Keys of other
 * namespaces (providers', `pulumi:`) are left to their owners.
 */
import { CONFIG_NAMESPACE } from "./validate";
import {
  isListSchema,
  isSetting,
  JsonSchema,
  KeySchema,
  OR_NAME,
  STACK_CONFIG_KEYS,
  TEXT_JSON,
} from "./stack-keys";

/** Where the schema is kept, relative to the repository. */
export const STACK_SCHEMA_FILE = "stacks/stack-config.schema.json";

const SECURE: JsonSchema = { $ref: "#/definitions/secure" };

function schemaOf(schema: KeySchema): JsonSchema {
  if (isSetting(schema)) return { anyOf: [schema.json, SECURE] };
  if (isListSchema(schema)) return { type: "array", items: schemaOf(schema[0]) };
  const map: JsonSchema = {
    type: "object",
    properties: Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, schemaOf(v)])),
    additionalProperties: false,
  };
  return schema[OR_NAME] ? { anyOf: [TEXT_JSON, map] } : map;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export function stackFileSchema(): JsonSchema {
  const keys = Object.keys(STACK_CONFIG_KEYS);
  const ns = escapeRegExp(CONFIG_NAMESPACE);
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "Pulumi stack file of rke2-remediation",
    description:
      "Generated from infra/config/stack-keys.ts by `npm run schema`; docs/configuration.md describes each key.",
    type: "object",
    properties: {
      config: {
        type: "object",
        properties: Object.fromEntries(
          keys.map((key) => {
            const inner = STACK_CONFIG_KEYS[key];
            const value = isSetting(inner) ? schemaOf(inner) : { anyOf: [schemaOf(inner), SECURE] };
            return [`${CONFIG_NAMESPACE}:${key}`, value];
          }),
        ),
        // A key of this program's namespace that it does not read.
        patternProperties: { [`^${ns}:(?!(${keys.map(escapeRegExp).join("|")})$)`]: false },
      },
    },
    definitions: {
      secure: {
        type: "object",
        properties: { secure: { type: "string" } },
        required: ["secure"],
        additionalProperties: false,
      },
    },
  };
}

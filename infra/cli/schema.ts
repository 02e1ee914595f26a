/**
 * `npm run schema`: writes the stack files' JSON Schema (infra/config/json-schema.ts) to
 * stacks/stack-config.schema.json. A test fails when the file differs from the declaration.
 */
import * as fs from "fs";
import * as path from "path";
import { STACK_SCHEMA_FILE, stackFileSchema } from "../config/json-schema";

const repo = path.resolve(__dirname, "..", "..", "..");
fs.writeFileSync(
  path.join(repo, STACK_SCHEMA_FILE),
  JSON.stringify(stackFileSchema(), null, 2) + "\n",
);
console.log(`wrote ${STACK_SCHEMA_FILE}`);

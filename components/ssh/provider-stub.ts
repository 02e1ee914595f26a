/**
 * How a dynamic resource names its provider. Pulumi's Node.js SDK keeps a dynamic resource's
 * provider in its inputs and outputs as `__provider`: a module's source, which the
 * dynamic-provider process loads with `require-from-string` and whose exported `handler()`
 * returns the provider, once per distinct text (pulumi/pulumi@v3.276.0
 * sdk/nodejs/cmd/dynamic-provider/index.ts `getProvider`). `dynamic.Resource` fills it by
 * serializing the provider object with everything it reaches (sdk/nodejs/dynamic/index.ts
 * `serializeProvider`: about 3 KB for a forwarding object, tens of KB for a provider). Here
 * that text is written directly, a few lines that require ../host-providers and pick the
 * provider by name (./host-step-resource.ts `HostProviderResource` registers it).
 *
 * The dynamic-provider process runs in the program's working directory: the directory of the
 * project's `main` (`infra/` here; pulumi/pulumi@v3.276.0 pkg/engine/project.go `getPwdMain`),
 * where the engine starts every plugin (sdk/go/common/resource/plugin/plugin.go, `cmd.Dir = pwd`),
 * and a module loaded from a string resolves `require` from there, so the registry is found
 * relative to it. When the program runs from TypeScript source, the text registers ts-node the
 * way Pulumi's own runner picks it (sdk/nodejs/tsutils.ts `typeScriptRequireStrings`), with the
 * package's tsconfig.json, transpiling only.
 */
import * as path from "path";
import { type HostProviderName, PROVIDER_STUB_MARKER } from "./provider-names";

const REGISTRY = path.join(__dirname, "..", "host-providers");

/** The module text `__provider` holds for a provider: the same text for every resource using it. */
export function providerLoader(name: HostProviderName): string {
  const registry = path.relative(process.cwd(), REGISTRY).split(path.sep).join("/");
  return [
    `// ${PROVIDER_STUB_MARKER}: ${name}`,
    `const path = require("path"), file = path.resolve(${JSON.stringify(registry)});`,
    `if (!require("fs").existsSync(file + ".js") && !require.extensions[".ts"]) {`,
    `  const ts = require("@pulumi/pulumi/tsutils").typeScriptRequireStrings();`,
    `  require(ts.tsnodeRequire).register({ compiler: ts.typescriptRequire, transpileOnly: true,`,
    `    project: path.join(file, "..", "..", "tsconfig.json") });`,
    `}`,
    `exports.handler = () => require(file).hostProvider(${JSON.stringify(name)});`,
    ``,
  ].join("\n");
}

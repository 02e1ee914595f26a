/**
 * The provider object a dynamic resource is registered with: a loader that requires
 * ../host-providers in the dynamic-provider process and forwards each call to the named
 * provider there. Pulumi serializes this object into the resource's state (`__provider`), so it
 * captures only two strings; the provider's code stays in the package.
 *
 * The dynamic-provider process runs in the program's working directory: the directory of the
 * project's `main` (`infra/` here; pulumi/pulumi@v3.276.0 pkg/engine/project.go `getPwdMain`),
 * where the engine starts every plugin (sdk/go/common/resource/plugin/plugin.go, `cmd.Dir = pwd`),
 * so the module is found relative to it. When the program
 * runs from TypeScript source, the loader registers ts-node there the way Pulumi's own runner
 * picks it (pulumi/pulumi@v3.276.0 sdk/nodejs/tsutils.ts `typeScriptRequireStrings`), with the
 * package's tsconfig.json, transpiling only.
 */
import * as path from "path";
import type * as pulumi from "@pulumi/pulumi";
import { type HostProviderName, PROVIDER_STUB_MARKER } from "../host-providers";

const REGISTRY = path.join(__dirname, "..", "host-providers");

const stubs = new Map<HostProviderName, pulumi.dynamic.ResourceProvider>();

/** The loader for one provider; one object per name, so Pulumi serializes each once. */
export function providerStub(name: HostProviderName): pulumi.dynamic.ResourceProvider {
  const known = stubs.get(name);
  if (known) return known;
  const registry = path.relative(process.cwd(), REGISTRY).split(path.sep).join("/");
  const marker = PROVIDER_STUB_MARKER;
  // The loader runs in the dynamic-provider process, where only `require` reaches the package.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const load = () => {
    const nodePath = require("path");
    const nodeFs = require("fs");
    const file = nodePath.resolve(process.cwd(), registry);
    if (!nodeFs.existsSync(`${file}.js`) && !require.extensions[".ts"]) {
      const ts = require("@pulumi/pulumi/tsutils").typeScriptRequireStrings();
      require(ts.tsnodeRequire).register({
        compiler: ts.typescriptRequire,
        transpileOnly: true,
        project: nodePath.join(nodePath.dirname(file), "..", "tsconfig.json"),
      });
    }
    const provider = require(file).hostProvider(name);
    if (provider === undefined) throw new Error(`${marker}: no provider ${name} in ${file}`);
    return provider;
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
  const stub: pulumi.dynamic.ResourceProvider = {
    configure: (req) => load().configure(req),
    check: (olds, news) => load().check(olds, news),
    diff: (id, olds, news) => load().diff(id, olds, news),
    create: (inputs) => load().create(inputs),
    read: (id, props) => load().read(id, props),
    update: (id, olds, news) => load().update(id, olds, news),
    delete: (id, props) => load().delete(id, props),
  };
  stubs.set(name, stub);
  return stub;
}

import * as pulumi from "@pulumi/pulumi";
import { RANCHER_CLUSTER_TYPE, type RecordedResource } from "../components/model";
export type { RecordedResource };
import { rancherCaChecksum } from "../components/rancher-cluster/registration";

interface RegisterRequest {
  getType(): string;
  getName(): string;
  getParent(): string;
  getCustom(): boolean;
  getDependenciesList(): string[];
  getPropertydependenciesMap(): {
    forEach(cb: (value: { getUrnsList(): string[] }, key: string) => void): void;
  };
  getProtect(): boolean;
  getRetainondelete?(): boolean;
  getIgnorechangesList(): string[];
  getAdditionalsecretoutputsList(): string[];
  getProvider(): string;
  /** Structured aliases (pulumi/pulumi@v3.276.0 proto/pulumi/alias.proto): a URN or a spec. */
  getAliasesList(): { getSpec(): { getParenturn(): string } | undefined }[];
}

interface Monitor {
  registerResource(
    req: RegisterRequest,
    callback: (err: unknown, resp?: { getUrn(): string }) => void,
  ): void;
}

interface SettingsInternals {
  waitForRPCs(): Promise<void>;
}

/**
 * Outputs as a preview shows them: a resource's inputs, and for Rancher's ClusterV2 what Rancher
 * answers on creation (a stand-in: an id, and a registration token whose nodeCommand and
 * insecureNodeCommand have Rancher's form, both pinning the checksum Rancher computes of the
 * rancher2 provider's CA), so offline checks see the command that will run.
 */
export function rancherPreviewOutputs(): (
  type: string,
  name: string,
  inputs: Record<string, unknown>,
) => Record<string, unknown> {
  let rancher: { apiUrl?: string; caCerts?: string } = {};
  return (type, name, inputs) => {
    if (type === "pulumi:providers:rancher2") rancher = inputs;
    if (type !== RANCHER_CLUSTER_TYPE) return inputs;
    const serverUrl = rancher.apiUrl ?? "https://rancher.invalid";
    const caChecksum = rancher.caCerts ? rancherCaChecksum(rancher.caCerts) : undefined;
    const token = "preview-registration-token";
    const command = (insecure: boolean) =>
      rancherNodeCommand({ serverUrl, token, caChecksum, insecure });
    return {
      ...inputs,
      clusterV1Id: `c-m-${name}`,
      clusterRegistrationToken: {
        token,
        nodeCommand: command(false),
        insecureNodeCommand: command(true),
      },
    };
  };
}

/**
 * Runs a Pulumi program under the SDK's mock monitor and returns everything it registered,
 * including dependencies, which `pulumi.runtime.Mocks` alone does not expose. Custom resources
 * get their inputs back as outputs, as a preview would show them.
 */
export async function recordProgram(
  project: string,
  stack: string,
  program: () => void,
  outputsFor: (
    type: string,
    name: string,
    inputs: Record<string, unknown>,
  ) => Record<string, unknown> = rancherPreviewOutputs(),
): Promise<RecordedResource[]> {
  const inputsByKey = new Map<string, Record<string, unknown>>();
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        inputsByKey.set(`${args.type}::${args.name}`, args.inputs as Record<string, unknown>);
        return { id: `${args.name}-id`, state: outputsFor(args.type, args.name, args.inputs) };
      },
      call: (args) => args.inputs,
    },
    project,
    stack,
    true,
  );
  const monitor = pulumi.runtime.getMonitor() as unknown as Monitor;
  const recorded: RecordedResource[] = [];
  const register = monitor.registerResource.bind(monitor);
  monitor.registerResource = (req, callback) => {
    register(req, (err, resp) => {
      if (!err && resp) {
        const propertyDependencies: Record<string, string[]> = {};
        req.getPropertydependenciesMap().forEach((value, key) => {
          propertyDependencies[key] = value.getUrnsList();
        });
        recorded.push({
          urn: resp.getUrn(),
          type: req.getType(),
          name: req.getName(),
          custom: req.getCustom(),
          parent: req.getParent(),
          inputs: inputsByKey.get(`${req.getType()}::${req.getName()}`) ?? {},
          dependencies: req.getDependenciesList(),
          propertyDependencies,
          protect: req.getProtect(),
          retainOnDelete: req.getRetainondelete?.() ?? false,
          ignoreChanges: req.getIgnorechangesList(),
          additionalSecretOutputs: req.getAdditionalsecretoutputsList(),
          provider: req.getProvider(),
          aliasParents: req
            .getAliasesList()
            .map((a) => a.getSpec()?.getParenturn() ?? "")
            .filter(Boolean),
        });
      }
      callback(err, resp);
    });
  };
  program();
  // The SDK's own internal drain: resolves once every registration RPC has completed.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const settings = require("@pulumi/pulumi/runtime/settings") as SettingsInternals;
  await settings.waitForRPCs();
  return recorded;
}

/**
 * A registration command in the form Rancher's clusterRegistrationToken gives it (nodeCommand,
 * or insecureNodeCommand), the mock runtime's answer for ClusterV2 (the offline verifier's and the tests' stand-in):
 * rancher/rancher@v2.14.3 status.go formats `"%s curl -fL %s | sudo %s sh -s - ..."` with empty
 * agent env vars, hence the leading space and `sudo  sh`. Both commands carry the checksum.
 */
export function rancherNodeCommand(options: {
  readonly serverUrl: string;
  readonly token: string;
  readonly caChecksum?: string;
  readonly insecure: boolean;
  /** The shell that runs the installer: `sudo  sh` as Rancher writes it; `sh` for root. */
  readonly shell?: string;
}): string {
  const curl = options.insecure ? "curl --insecure -fL" : "curl -fL";
  const checksum = options.caChecksum ? ` --ca-checksum ${options.caChecksum}` : "";
  return (
    ` ${curl} ${options.serverUrl}/system-agent-install.sh | ${options.shell ?? "sudo  sh"} -s - ` +
    `--server ${options.serverUrl} --label 'cattle.io/os=linux' --token ${options.token}${checksum}`
  );
}

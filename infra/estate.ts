/**
 * The estate as one component, for Pulumi programs of their own that import this package
 * (`import { Rke2Estate } from "rke2-remediation"`). It takes the settings a stack file gives
 * (the keys of stacks/stack-config.schema.json, without the `rke2-remediation:` prefix), checks
 * and completes them with the very functions the stack-config program uses (./config/validate.ts:
 * the same defaults, the same messages naming the key), and declares the same resources in the
 * same order (./program.ts), as its children.
 */
import * as pulumi from "@pulumi/pulumi";
import { SECRET_KEYS, SecretKey } from "../components/model";
import { MANAGEMENT_STACK_KEY, ManagementStackOutputs } from "./config/management-stack";
import { ConfigProblem } from "./config/problems";
import { StackSettings } from "./config/stack-keys";
import { CONFIG_NAMESPACE, configWarnings, validateEnvironment } from "./config/validate";
import { deployEnvironment, EnvironmentOutputs } from "./program";

/**
 * An estate's settings: a stack file's `rke2-remediation:` keys as plain values, e.g.
 * `{ nodes: [{ name, ip, role: "server", ssh: { hostKey } }], rke2: { version }, dns: {...} }`.
 * The type is derived from the stack config's declaration (./config/stack-keys.ts), so a
 * misspelt key or a value of the wrong type fails to compile; what only validation knows
 * (addresses, names, the keys a selection requires) fails at preview, every problem at once.
 * docs/configuration.md lists every key with its default.
 */
export type EstateSettings = StackSettings;

export interface Rke2EstateArgs {
  /** The estate's settings; the secrets below are not among them. */
  readonly settings: EstateSettings;
  /**
   * The SSH private key for every host, as a secret. The host steps' provider reads the key
   * from the stack's configuration when it connects (a refresh or destroy runs no program), at
   * `sshPrivateKeyConfig`: pass the same secret here, `config.requireSecret("sshPrivateKey")`.
   * Only its fingerprint is kept in state.
   */
  readonly sshPrivateKey: pulumi.Input<string>;
  /**
   * The stack config key that holds `sshPrivateKey`, where the program keeps it under another
   * name than the project's `sshPrivateKey` (`"myorg:sshKey"`, or a key a Pulumi ESC
   * environment sets under `pulumiConfig`); a name without a namespace is the project's.
   */
  readonly sshPrivateKeyConfig?: string;
  /** The RKE2 join token; required when the settings list a management server. */
  readonly rke2Token?: pulumi.Input<string>;
  /** Rancher's API token; required when the settings declare downstream clusters. */
  readonly rancherToken?: pulumi.Input<string>;
  /** The management cluster's kubeconfig; required with `rke2.dnsDelivery: helmChartConfig`. */
  readonly kubeconfig?: pulumi.Input<string>;
  /**
   * Registry credentials for the management nodes' registries.yaml, as JSON of registry ->
   * `{ username, password }`, `{ auth }` or `{ identity_token }`.
   */
  readonly registryAuth?: pulumi.Input<string>;
  /**
   * The management stack's `rancher` output, when the settings name a `managementStack`
   * (read it with a `pulumi.StackReference`).
   */
  readonly managementOutputs?: ManagementStackOutputs;
}

/**
 * A Rancher + RKE2 estate on KVM/libvirt: the libvirt DNS records, prepared nodes, RKE2 servers
 * joined one at a time, the cluster DNS fix and Rancher downstream clusters, each part as the
 * settings' `deploy` switches select it. Its children's names start with the estate's name.
 * Settings that do not validate fail before anything is declared, with every problem named by
 * its key.
 */
export class Rke2Estate extends pulumi.ComponentResource {
  /**
   * What the stack-config program exports, as the README's table of outputs lists them:
   * `preparedNodes`, `nodesRequiringReboot`, `nodesPendingRestart`, `managementCluster`, ...
   */
  public readonly outputs: EnvironmentOutputs;

  constructor(name: string, args: Rke2EstateArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:estate:Rke2Estate", name, {}, opts);
    // A program in JavaScript, or one that casts, can still pass them.
    const values: Readonly<Record<string, unknown>> = args.settings;
    const inSettings = SECRET_KEYS.filter((key) => values[key] !== undefined);
    if (inSettings.length > 0) {
      throw new pulumi.ResourceError(
        `${name}: settings.${inSettings.join(", settings.")} would be kept in plain text; pass ` +
          `${inSettings.length > 1 ? "them as the arguments of the same names" : "it as the argument of the same name"}, a secret.`,
        this,
      );
    }
    const secrets = estateSecrets(args);
    const raw = { values, secretKeys: new Set(Object.keys(secrets)) };
    const { model, problems } = validateEnvironment(name, raw, {
      requireSecrets: true,
      managementOutputs: args.managementOutputs,
    });
    if (!model) {
      throw new pulumi.ResourceError(settingsError(name, problems, args), this);
    }
    for (const warning of configWarnings(model, raw)) {
      void pulumi.log.warn(`${settingsKey(warning.key)}: ${warning.message}`, this);
    }
    this.outputs = deployEnvironment(
      model,
      secrets,
      { parent: this, namePrefix: `${name}-` },
      sshKeyConfigOf(args.sshPrivateKeyConfig),
    );
    this.registerOutputs({ ...this.outputs });
  }
}

/**
 * The config key the providers read the SSH key from, with the program's project namespace where
 * none is given (the dynamic providers' config reader adds the same: pulumi/pulumi@v3.276.0
 * sdk/nodejs/cmd/dynamic-provider/config.ts); undefined for the project's own `sshPrivateKey`.
 */
function sshKeyConfigOf(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const full = name.includes(":") ? name : `${pulumi.getProject()}:${name}`;
  return full === `${pulumi.getProject()}:sshPrivateKey` ? undefined : full;
}

/** A stack config key (`rke2-remediation:nodes[1].ip`) as the settings' (`settings.nodes[1].ip`). */
function settingsKey(key: string): string {
  return key.startsWith(`${CONFIG_NAMESPACE}:`)
    ? `settings.${key.slice(CONFIG_NAMESPACE.length + 1)}`
    : key;
}

/**
 * Every problem the validator found, keyed as the estate's arguments are. Where the validator
 * tells a stack what to run (`pulumi config set --secret`, `--management-outputs`), the estate
 * takes an argument instead.
 */
function settingsError(
  name: string,
  problems: readonly ConfigProblem[],
  args: Rke2EstateArgs,
): string {
  const lines = problems.map((p) => {
    const secret = SECRET_KEYS.find((k) => p.key === `${CONFIG_NAMESPACE}:${k}`);
    if (secret !== undefined) {
      return `  - ${secret}: is needed by these settings; pass it to Rke2Estate, a secret.`;
    }
    if (
      p.key === `${CONFIG_NAMESPACE}:${MANAGEMENT_STACK_KEY}` &&
      args.managementOutputs === undefined
    ) {
      return (
        `  - settings.${MANAGEMENT_STACK_KEY}: names a management stack; pass its \`rancher\` output ` +
        "as managementOutputs (read it with a pulumi.StackReference)."
      );
    }
    return `  - ${settingsKey(p.key)}: ${p.message}`;
  });
  return `Rke2Estate "${name}" has ${problems.length} problem(s) in its arguments:\n${lines.join("\n")}`;
}

/** The secrets given, as Pulumi secrets, by their stack config key. */
function estateSecrets(args: Rke2EstateArgs): Partial<Record<SecretKey, pulumi.Output<string>>> {
  const secrets: Partial<Record<SecretKey, pulumi.Output<string>>> = {};
  for (const key of SECRET_KEYS) {
    const value = args[key];
    if (value !== undefined) secrets[key] = pulumi.secret(value);
  }
  return secrets;
}

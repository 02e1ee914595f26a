/**
 * One file on a host, converged over SSH with a pinned host key: written atomically with its
 * mode, read back on refresh so hand edits show as drift. Used for files RKE2 picks up by
 * itself, such as manifests in /var/lib/rancher/rke2/server/manifests.
 */
import * as pulumi from "@pulumi/pulumi";
import { REMOTE_FILE, SshEndpoint } from "../model";
import { scriptRef, scriptText } from "../assets";
import * as path from "path";
import * as ssh from "../ssh/run-script";
import { HostStepResource, SshKey } from "../ssh/host-step-resource";

export interface RemoteFileState {
  readonly host: string;
  readonly connection: SshEndpoint;
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  readonly script: string;
  readonly path: string;
  /** Desired content on input; found content on output ("" when absent). */
  readonly content: string;
  readonly mode: string;
  /** Whether the file exists, as found. */
  readonly present?: boolean;
  /** Keep the file when the resource is deleted. */
  readonly retainOnDelete: boolean;
  /** rke2-facts.sh: the path is under the data-dir RKE2 reads there (see RemoteFileArgs). */
  readonly rke2FactsScript?: string;
}

export function parseFileReport(stdout: string): {
  present: boolean;
  mode: string;
  content: string;
} {
  const line = stdout.trim().split("\n").pop() ?? "";
  const [state, mode, b64] = line.split(" ");
  if (state === "present")
    return { present: true, mode, content: Buffer.from(b64 ?? "", "base64").toString("utf8") };
  if (state === "absent") return { present: false, mode: "", content: "" };
  throw new Error(`unexpected file report "${line}"`);
}

async function runFileScript(state: RemoteFileState, action: "read" | "write" | "delete") {
  const result = await ssh.runHostScript(state.connection, state, state.script, {
    label: `${state.host} ${state.path}`,
    params: {
      ACTION: action,
      FILE: state.path,
      CONTENT: Buffer.from(state.content).toString("base64"),
      MODE: state.mode,
      RKE2_FACTS_SCRIPT: state.rke2FactsScript
        ? scriptText(state.rke2FactsScript, `${state.host} ${state.path}`)
        : "",
    },
    timeoutMs: 60000,
    log: (line) => pulumi.log.info(line),
  });
  const found = parseFileReport(result.stdout);
  return {
    ...state,
    content: found.content,
    mode: found.present ? found.mode : state.mode,
    present: found.present,
  };
}

export const remoteFileProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: RemoteFileState, news: RemoteFileState) {
    const keys = [
      "content",
      "mode",
      "path",
      "script",
      "sshKeyFingerprint",
      "retainOnDelete",
      "host",
      "rke2FactsScript",
    ] as const;
    return {
      changes: ssh.inputsDiffer(olds, news, [...keys, "connection"]) || olds.present === false,
      replaces:
        olds.path !== news.path || olds.connection.host !== news.connection.host ? ["path"] : [],
      deleteBeforeReplace: false,
    };
  },
  async create(inputs: RemoteFileState) {
    return { id: `${inputs.host}:${inputs.path}`, outs: await runFileScript(inputs, "write") };
  },
  async read(id: string, props: RemoteFileState) {
    return { id, props: await runFileScript(props, "read") };
  },
  async update(_id: string, _olds: RemoteFileState, news: RemoteFileState) {
    return { outs: await runFileScript(news, "write") };
  },
  async delete(_id: string, props: RemoteFileState) {
    if (!props.retainOnDelete) await runFileScript(props, "delete");
  },
};

class RemoteFileResource extends HostStepResource {
  declare readonly content: pulumi.Output<string>;
  declare readonly present: pulumi.Output<boolean>;
}

export interface RemoteFileArgs {
  /** A name for the host in messages, e.g. the node name. */
  readonly hostName: string;
  readonly ssh: SshEndpoint;
  readonly sshPrivateKey: SshKey;
  /** Absolute path on the host. */
  readonly path: string;
  readonly content: pulumi.Input<string>;
  /** Octal mode, default 0600. */
  readonly mode?: string;
  /** Leave the file on the host when the resource is deleted. Default false. */
  readonly retainOnDelete?: boolean;
  /** The content holds a secret (an RKE2 token): keep it encrypted in state, never logged. */
  readonly secretContent?: boolean;
  /**
   * The path is under RKE2's default data-dir (/var/lib/rancher/rke2): the file goes under the
   * data-dir RKE2 reads on the host instead (config.yaml, its drop-ins, RKE2_DATA_DIR), found by
   * rke2-facts.sh when the step runs. RKE2 applies only the manifests under its own data-dir.
   */
  readonly underRke2DataDir?: boolean;
}

/** The RKE2 component's facts script, which reports the data-dir RKE2 reads on a host. */
export function rke2FactsScriptRef(): string {
  return scriptRef(path.join(__dirname, "..", "rke2-cluster"), "rke2-facts.sh");
}

export class RemoteFile extends pulumi.ComponentResource {
  /** The content found on the host after the last update or refresh. */
  public readonly content: pulumi.Output<string>;

  constructor(name: string, args: RemoteFileArgs, opts?: pulumi.ComponentResourceOptions) {
    super("rke2remediation:host:File", name, {}, opts);
    if (!args.path.startsWith("/"))
      throw new pulumi.ResourceError(
        `${args.hostName}: path "${args.path}" must be absolute.`,
        this,
      );
    const file = new RemoteFileResource(
      "remoteFile",
      REMOTE_FILE,
      `${name}-file`,
      {
        ssh: args.ssh,
        sshPrivateKey: args.sshPrivateKey,
        script: scriptRef(__dirname, "remote-file.sh"),
      },
      {
        host: args.hostName,
        path: args.path,
        content: args.secretContent ? pulumi.secret(args.content) : args.content,
        mode: args.mode ?? "0600",
        present: true,
        retainOnDelete: args.retainOnDelete ?? false,
        ...(args.underRke2DataDir ? { rke2FactsScript: rke2FactsScriptRef() } : {}),
      },
      {
        parent: this,
        additionalSecretOutputs: args.secretContent ? ["content"] : [],
      },
    );
    this.content = file.content;
    this.registerOutputs({ content: this.content });
  }
}

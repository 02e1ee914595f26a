/**
 * The management cluster's admin kubeconfig, read from its first server for the stack output
 * (`managementCluster.kubeconfig`, a secret). RKE2 writes it for use on the server itself, with
 * the apiserver at `https://127.0.0.1:6443` (or the bind address); clients elsewhere replace the
 * loopback address with the server's (rancher/rke2-docs@9477b7b1 docs/cluster_access.md,
 * "Accessing the Cluster from Outside with kubectl"; k3s-io/k3s@25c0b5fb9bb3
 * pkg/server/server.go writeKubeConfig builds the URL from the bind address or the loopback and
 * the HTTPS port). The address put in its place is the one joining servers register through: the
 * stack's registration address, which tls-san must list, or the first server's IP, which RKE2
 * puts in its serving certificate.
 *
 * The step reads and changes nothing else; `read` reads the file again, so a kubeconfig RKE2
 * rewrote (its client certificate renewed) reaches the output on refresh.
 */
import type * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import type { SshEndpoint } from "../model";
import type { HostKeyState } from "../ssh/host-material";
import { inputsDiffer, runHostScript } from "../ssh/run-script";

/** Where RKE2 writes the admin kubeconfig on a server (read-kubeconfig.sh reads it). */
export const RKE2_KUBECONFIG_PATH = "/etc/rancher/rke2/rke2.yaml";

export interface KubeconfigState extends HostKeyState {
  readonly node: string;
  readonly connection: SshEndpoint;
  readonly script: string;
  /** The apiserver's address for clients outside the server. */
  readonly apiHost: string;
  /** The file as RKE2 wrote it, its loopback server address replaced by `apiHost`. */
  readonly kubeconfig?: string;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * The kubeconfig with every cluster whose server is a loopback address pointed at
 * `https://<apiHost>:<the same port>`; nothing else of the file changes. `node` names the server
 * in errors, which never quote the file (it holds the admin client key).
 */
export function externalKubeconfig(text: string, apiHost: string, node: string): string {
  const doc = YAML.parseDocument(text);
  const clusters = doc.errors.length === 0 ? doc.get("clusters") : undefined;
  if (!YAML.isSeq(clusters) || clusters.items.length === 0) {
    throw new Error(
      `kubeconfig of ${node}: ${RKE2_KUBECONFIG_PATH} is not a kubeconfig with clusters; ` +
        "RKE2 rewrites it when rke2-server starts: restart it there, then re-run.",
    );
  }
  let out = text;
  let relaid = false;
  clusters.items.forEach((_, i) => {
    const server = String(doc.getIn(["clusters", i, "cluster", "server"]));
    let url: URL;
    try {
      url = new URL(server);
    } catch {
      throw new Error(
        `kubeconfig of ${node}: cluster ${i} of ${RKE2_KUBECONFIG_PATH} has no server URL; ` +
          "RKE2 rewrites the file when rke2-server starts: restart it there, then re-run.",
      );
    }
    if (!LOOPBACK.has(url.hostname)) return;
    url.hostname = apiHost;
    doc.setIn(["clusters", i, "cluster", "server"], url.origin);
    // The line itself is replaced, so the file keeps its layout as RKE2 wrote it; a layout
    // with no such line is written out anew.
    const line = new RegExp(`^(\\s*server:\\s*["']?)${escapeRegExp(server)}(["']?\\s*)$`, "gm");
    const replaced = out.replace(
      line,
      (_m, head: string, tail: string) => `${head}${url.origin}${tail}`,
    );
    if (replaced === out) relaid = true;
    out = replaced;
  });
  return relaid ? doc.toString() : out;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

async function readKubeconfig(state: KubeconfigState): Promise<string> {
  const label = `kubeconfig of ${state.node}`;
  const result = await runHostScript(state.connection, state, state.script, {
    label,
    timeoutMs: 60000,
  });
  const facts = new Map(
    result.stdout
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const),
  );
  const error = facts.get("kubeconfig_error");
  const content = facts.get("kubeconfig_b64");
  if (error !== undefined || content === undefined) {
    throw new Error(
      `${label}: ${RKE2_KUBECONFIG_PATH} on ${state.connection.host} is ${error ?? "not reported"}; ` +
        "RKE2 writes it when rke2-server starts there: check that it runs, then re-run.",
    );
  }
  return externalKubeconfig(
    Buffer.from(content, "base64").toString("utf8"),
    state.apiHost,
    state.node,
  );
}

export const kubeconfigProvider: pulumi.dynamic.ResourceProvider = {
  async diff(_id: string, olds: KubeconfigState, news: KubeconfigState) {
    const keys = ["connection", "script", "sshKeyFingerprint", "apiHost"] as const;
    return { changes: !olds.kubeconfig || inputsDiffer(olds, news, [...keys]) };
  },
  async create(inputs: KubeconfigState) {
    return {
      id: `${inputs.node}/kubeconfig`,
      outs: { ...inputs, kubeconfig: await readKubeconfig(inputs) },
    };
  },
  async read(id: string, props: KubeconfigState) {
    return { id, props: { ...props, kubeconfig: await readKubeconfig(props) } };
  },
  async update(_id: string, _olds: KubeconfigState, news: KubeconfigState) {
    return { outs: { ...news, kubeconfig: await readKubeconfig(news) } };
  },
  async delete() {},
};

/**
 * A read-only client of the Kubernetes API from a kubeconfig's current context, for the live
 * checks in front of the cluster DNS fix (GET only). Loads no Pulumi SDK.
 */
import * as https from "https";
import * as YAML from "yaml";

export interface ApiClient {
  readonly server: URL;
  readonly options: https.RequestOptions;
}

/**
 * The current context's server and credentials: a client certificate or a bearer token, and the
 * cluster's CA. Credentials from files or exec plugins are refused with the reason, never
 * guessed; the kubeconfig's content never reaches a message.
 */
export function apiClientOf(kubeconfig: string): ApiClient {
  type Named<T> = { name?: string } & T;
  const doc = (YAML.parse(kubeconfig) ?? {}) as {
    "current-context"?: string;
    contexts?: Named<{ context?: { cluster?: string; user?: string } }>[];
    clusters?: Named<{ cluster?: Record<string, unknown> }>[];
    users?: Named<{ user?: Record<string, unknown> }>[];
  };
  const context = (doc.contexts ?? []).find((c) => c.name === doc["current-context"])?.context;
  const cluster = (doc.clusters ?? []).find((c) => c.name === context?.cluster)?.cluster;
  const user = (doc.users ?? []).find((u) => u.name === context?.user)?.user ?? {};
  if (!context || !cluster || typeof cluster.server !== "string") {
    throw new Error(
      "the kubeconfig has no current context with a cluster server; set rke2-remediation:kubeconfig to the cluster's admin kubeconfig.",
    );
  }
  const decode = (value: unknown) =>
    typeof value === "string" ? Buffer.from(value, "base64") : undefined;
  if (user.exec !== undefined || user["auth-provider"] !== undefined) {
    throw new Error(
      "the kubeconfig's user authenticates through an exec or auth-provider plugin, which this check does not run; give rke2-remediation:kubeconfig a client certificate or token.",
    );
  }
  if (cluster["insecure-skip-tls-verify"] === true) {
    throw new Error(
      "the kubeconfig skips TLS verification; give rke2-remediation:kubeconfig the cluster's certificate-authority-data.",
    );
  }
  const options: https.RequestOptions = {
    ca: decode(cluster["certificate-authority-data"]),
    cert: decode(user["client-certificate-data"]),
    key: decode(user["client-key-data"]),
    headers: typeof user.token === "string" ? { authorization: `Bearer ${user.token}` } : {},
  };
  return { server: new URL(cluster.server), options };
}

export function apiGet(client: ApiClient, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, client.server);
    const request = https.request(
      url,
      { ...client.options, method: "GET", timeout: 15000 },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on("timeout", () => request.destroy(new Error(`GET ${url.href} timed out after 15 s`)));
    request.on("error", reject);
    request.end();
  });
}

/** The live `rke2-coredns` HelmChartConfig, as far as keeping an operator's values needs it. */
export type LiveHelmChartConfig =
  | { readonly found: false }
  | {
      readonly found: true;
      readonly valuesContent: string;
      readonly annotations: Readonly<Record<string, string>>;
    };

/**
 * GET kube-system/rke2-coredns from helm.cattle.io/v1 (the HelmChartConfig must match the name
 * and namespace of RKE2's packaged HelmChart: rancher/rke2-docs@9477b7b1 docs/add-ons/helm.md).
 * 404 is "not found"; any other answer but 200 is an error naming the server and the status.
 */
export async function readHelmChartConfig(kubeconfig: string): Promise<LiveHelmChartConfig> {
  const client = apiClientOf(kubeconfig);
  const path = "/apis/helm.cattle.io/v1/namespaces/kube-system/helmchartconfigs/rke2-coredns";
  const r = await apiGet(client, path);
  if (r.status === 404) return { found: false };
  if (r.status !== 200) {
    throw new Error(`GET ${path} on ${client.server.host} answered ${r.status}`);
  }
  const object = JSON.parse(r.body) as {
    metadata?: { annotations?: Record<string, string> };
    spec?: { valuesContent?: string };
  };
  return {
    found: true,
    valuesContent: object.spec?.valuesContent ?? "",
    annotations: object.metadata?.annotations ?? {},
  };
}

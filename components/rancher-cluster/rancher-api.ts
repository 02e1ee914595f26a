/**
 * GET requests to Rancher's API with the stack's API token (a secret: it goes only into the
 * Authorization header, never into a message) and Rancher's CA pinned when the stack gives it.
 * Used by dynamic providers: everything is built inside the call.
 */
import * as https from "https";

export interface RancherApiTarget {
  /** rancher.url, https://<host>[:port] */
  readonly url: string;
  /** Rancher API token; a secret. */
  readonly token: string;
  /** PEM of Rancher's CA; unset: the system trust store. */
  readonly caCertificate?: string;
}

/** The JSON body of `GET <rancher.url><route>`; an error names the route and the status. */
export function rancherGet(
  target: RancherApiTarget,
  route: string,
  timeoutMs = 30000,
): Promise<unknown> {
  const url = new URL(route, target.url.replace(/\/+$/, "") + "/");
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: "GET",
        headers: { Authorization: `Bearer ${target.token}`, Accept: "application/json" },
        ca: target.caCertificate,
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== 200) {
            reject(new Error(`Rancher answered ${res.statusCode ?? "?"} to GET ${url.pathname}`));
            return;
          }
          try {
            resolve(JSON.parse(body));
          } catch {
            reject(new Error(`Rancher's answer to GET ${url.pathname} is not JSON`));
          }
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)));
    req.on("error", (err) =>
      reject(new Error(`GET ${url.origin}${url.pathname} failed: ${err.message}`)),
    );
    req.end();
  });
}

/**
 * The downstream cluster a machine's plan secret belongs to: its label
 * `rke.cattle.io/cluster-name` (rancher/rancher@v2.14.3 pkg/capr/common.go ClusterNameLabel, set
 * to the cluster's name in pkg/controllers/capr/bootstrap/controller.go
 * getLabelsAndAnnotationsForPlanSecret), read through Rancher's proxy of the local cluster's
 * Kubernetes API (pkg/api/steve/proxy/proxy.go, `/api`).
 */
export async function planSecretCluster(
  target: RancherApiTarget,
  namespace: string,
  secretName: string,
): Promise<string | undefined> {
  const secret = (await rancherGet(
    target,
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(secretName)}`,
  )) as { metadata?: { labels?: Record<string, string> } };
  return secret.metadata?.labels?.["rke.cattle.io/cluster-name"];
}

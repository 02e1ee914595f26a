/**
 * A client for the lab's Rancher stand-in API (server.ts): JSON over HTTPS, Rancher's certificate
 * verified against the CA given, the API token as a bearer token. Used by the rancher2 plugin
 * stand-in and by the tests; it computes nothing.
 */
import * as https from "https";

export interface RancherApiTarget {
  /** https://<hostname>[:port] */
  readonly apiUrl: string;
  readonly ca: string;
  readonly token: string;
  /** Connect to this address instead of resolving the URL's hostname (TLS still checks it). */
  readonly connectTo?: string;
}

export interface RancherApiReply {
  readonly status: number;
  readonly json: Record<string, unknown>;
}

export function rancherApi(
  target: RancherApiTarget,
  method: string,
  route: string,
  body?: unknown,
): Promise<RancherApiReply> {
  const url = new URL(route, target.apiUrl);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: target.connectTo ?? url.hostname,
        servername: url.hostname,
        port: url.port || 443,
        path: url.pathname,
        method,
        ca: target.ca,
        headers: { authorization: `Bearer ${target.token}`, "content-type": "application/json" },
        timeout: 15000,
        // A connection per request: a kept-alive socket the server has just closed fails the
        // next request with "socket hang up".
        agent: false,
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            json: text ? (JSON.parse(text) as Record<string, unknown>) : {},
          }),
        );
      },
    );
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error(`${method} ${url.href} timed out`)));
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

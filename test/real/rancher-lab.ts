/**
 * The lab's Rancher stand-in as the real tier's Rancher cases reach it: its address, CA and API
 * token, the node it registers, and a few steps every case needs (Rancher reachable from the
 * nodes, a new downstream cluster).
 */
import * as assert from "assert/strict";
import { spawnSync } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { rancherApi } from "../lab/rancher-standin/api-client";
import { digA, handAddDnsHost, inNamespace, LAB_DIR, labNs } from "./lab";

export const CA = fs.readFileSync(path.join(LAB_DIR, "rancher", "ca.pem"), "utf8");
export const API_TOKEN = fs.readFileSync(path.join(LAB_DIR, "rancher", "api-token"), "utf8").trim();
export const SERVER = "https://ai-ear.cn";
export const RANCHER_IP = "192.168.122.20";
export const FIRST = 31;
export const WORKER = 30;
export const ALLOW_HTTPS = ["INPUT", "-p", "tcp", "--dport", "443", "-j", "ACCEPT"];
export const REJECT_HTTPS = ["INPUT", "-p", "tcp", "--dport", "443", "-j", "REJECT"];
export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface ClusterView {
  id: string;
  name: string;
  state: string;
  conditions: { type: string; status: string; message: string }[];
  registrationToken: { token: string; nodeCommand: string; insecureNodeCommand: string };
}

export async function rancher(method: string, route: string, body?: unknown) {
  const target = { apiUrl: SERVER, ca: CA, token: API_TOKEN, connectTo: RANCHER_IP };
  return (await rancherApi(target, method, route, body)).json;
}

/**
 * Rancher reachable from the nodes whatever state other tests left: its name on the libvirt
 * network and its port open on .20. Returns whether the DNS record was added here (to remove).
 */
export function reachRancher(): boolean {
  let added = false;
  if (!digA("ai-ear.cn").includes(RANCHER_IP)) {
    handAddDnsHost(RANCHER_IP, "ai-ear.cn");
    added = true;
  }
  assert.equal(inNamespace(labNs("n20"), ["iptables", "-I", ...ALLOW_HTTPS]).status, 0);
  return added;
}

/** A new downstream cluster in Rancher, named `<prefix>-<time>`. */
export async function newCluster(prefix: string): Promise<ClusterView> {
  return (await rancher("POST", "/v3/clusters", {
    name: `${prefix}-${Date.now()}`,
    kubernetesVersion: "v1.35.7+rke2r1",
  })) as unknown as ClusterView;
}

/** Runs a script as root on a lab node (its mount and network namespaces), fed on stdin. */
export function onNode(octet: number, script: string, env: Record<string, string> = {}) {
  const pid = fs.readFileSync(path.join(LAB_DIR, "nodes", `n${octet}`, "sshd.pid"), "utf8").trim();
  const exports = Object.entries(env)
    .map(([k, v]) => `export ${k}='${v}'\n`)
    .join("");
  const r = spawnSync("nsenter", ["--target", pid, "--mount", "--net", "bash", "-s"], {
    input: exports + script,
    encoding: "utf8",
    timeout: 120000,
  });
  return { status: r.status ?? -1, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/**
 * The providers behind the program's dynamic resources, loaded by name in Pulumi's
 * dynamic-provider process. A resource's state holds only a small loader that requires this
 * module (../components/ssh/provider-stub.ts), not the provider's code: Pulumi's Node.js SDK
 * otherwise serializes each provider, with everything it reaches, into every resource's inputs
 * and outputs as `__provider` (pulumi/pulumi@v3.276.0 sdk/nodejs/dynamic/index.ts
 * `serializeProvider`), and the engine rewrites the whole state after each step.
 *
 * Every provider is wrapped so state written before the loader (the provider's code, the SSH
 * key, the scripts' text) is read as it is and rewritten once: an `up` that finds only such
 * state reports an update and rewrites the resource's state without contacting its host.
 */
import type * as pulumi from "@pulumi/pulumi";
import { sshKeyFingerprint, useStackConfig } from "./ssh/host-material";
import { type HostProviderName, PROVIDER_STUB_MARKER } from "./ssh/provider-names";
import { isScriptRef, scriptDigest } from "./assets";

/* eslint-disable @typescript-eslint/no-require-imports -- each provider loads on first use */
const PROVIDERS = {
  libvirtDns: () => require("./libvirt-dns/provider").libvirtDnsProvider,
  nodePreparation: () => require("./node-preparation/provider").nodePreparationProvider,
  portsPreflight: () => require("./node-preparation/preflight").preflightProvider,
  remoteFile: () => require("./remote-file").remoteFileProvider,
  upstreamPreflight: () => require("./cluster-dns/preflight").upstreamPreflightProvider,
  sshEgressCheck: () => require("./cluster-dns/egress-check-provider").sshEgressCheckProvider,
  manifestCheck: () => require("./cluster-dns/manifest-check-provider").manifestCheckProvider,
  kubeEgressCheck: () => require("./cluster-dns/egress-check-provider").kubeEgressCheckProvider,
  nodeStart: () => require("./rke2-cluster/provider").nodeStartProvider,
  joinGate: () => require("./rke2-cluster/provider").joinGateProvider,
  kubeconfig: () => require("./rke2-cluster/kubeconfig").kubeconfigProvider,
  nodeRegistration: () => require("./rancher-cluster/provider").nodeRegistrationProvider,
  clusterWait: () => require("./rancher-cluster/cluster-wait").clusterWaitProvider,
} satisfies Record<HostProviderName, () => pulumi.dynamic.ResourceProvider>;
/* eslint-enable @typescript-eslint/no-require-imports */

export { type HostProviderName, PROVIDER_STUB_MARKER };

type Props = Record<string, unknown>;

/**
 * The state as this version writes it: the key's fingerprint instead of the key, and each
 * script whose text equals the one planned now as the planned reference. `older` says whether
 * anything had to change.
 */
export function upgradeState(olds: Props, news: Props): { state: Props; older: boolean } {
  const state: Props = { ...olds };
  let older = false;
  if (typeof state.sshPrivateKey === "string") {
    state.sshKeyFingerprint ??= sshKeyFingerprint(state.sshPrivateKey);
    delete state.sshPrivateKey;
    older = true;
  }
  // Where the key is read is the program's choice, not the host's: a program that keeps its key
  // under another config key rewrites the state, so that a refresh or delete reads it there too.
  if (olds.sshKeyConfig !== news.sshKeyConfig) {
    if (news.sshKeyConfig === undefined) delete state.sshKeyConfig;
    else state.sshKeyConfig = news.sshKeyConfig;
    older = true;
  }
  for (const [key, value] of Object.entries(olds)) {
    const planned = news[key];
    if (typeof value !== "string" || typeof planned !== "string" || !isScriptRef(planned)) continue;
    if (!isScriptRef(value)) older = true;
    if (value !== planned && scriptDigest(value) === scriptDigest(planned)) state[key] = planned;
  }
  const code = olds.__provider;
  if (typeof code === "string" && !code.includes(PROVIDER_STUB_MARKER)) older = true;
  delete state.__provider;
  return { state, older };
}

function withoutProvider(props: Props): Props {
  const { __provider: _code, ...rest } = props;
  return rest;
}

/** The named provider, wrapped: every method present, older state upgraded before it is used. */
export function hostProvider(name: HostProviderName): Required<pulumi.dynamic.ResourceProvider> {
  const real: pulumi.dynamic.ResourceProvider = PROVIDERS[name]();
  const diffOf = async (id: string, olds: Props, news: Props) =>
    real.diff ? await real.diff(id, olds, withoutProvider(news)) : {};
  return {
    async configure(req: pulumi.dynamic.ConfigureRequest) {
      useStackConfig((key) => req.config.get(key));
      await real.configure?.(req);
    },
    async check(olds: Props, news: Props) {
      return real.check ? await real.check(olds, news) : { inputs: news };
    },
    async diff(id: string, olds: Props, news: Props) {
      const { state, older } = upgradeState(olds, news);
      const result = await diffOf(id, state, news);
      // Only the state's form changed: an update that rewrites it (see `update`).
      return older && result.changes === false ? { ...result, changes: true } : result;
    },
    async create(inputs: Props) {
      return await real.create(inputs);
    },
    async read(id: string, props: Props) {
      return real.read ? await real.read(id, props) : { id, props };
    },
    async update(id: string, olds: Props, news: Props) {
      const { state, older } = upgradeState(olds, news);
      if (older && (await diffOf(id, state, news)).changes === false) {
        // (The diff compared the key's fingerprint and each script's hash: `state` holds news'.)
        return { outs: state };
      }
      return real.update ? await real.update(id, state, news) : {};
    },
    async delete(id: string, props: Props) {
      await real.delete?.(id, props);
    },
  };
}

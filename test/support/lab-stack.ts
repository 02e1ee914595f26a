/**
 * The lab stack (`stacks/Pulumi.lab.yaml`, the seeds' estate) as tests start from it: its raw
 * config, read the way the offline `render` and `verify` commands read it, and its validated model.
 * Cases change one field of a private copy.
 */
import * as assert from "assert/strict";
import { EnvironmentModel } from "../../components/model";
import { rawConfigFromStackFile, stackFilePath } from "../../infra/config/stack-file";
import { RawStackConfig, validateEnvironment } from "../../infra/config/validate";
import {
  managementStackOutputs,
  ManagementStackOutputs,
} from "../../infra/config/management-stack";

/** A stack config a test may change: the values are a private deep copy. */
export interface MutableRawConfig extends RawStackConfig {
  readonly values: Record<string, unknown>;
  readonly secretKeys: Set<string>;
}

/** A fresh deep copy of the lab stack's config (secrets recorded as absent). */
export function labRawConfig(): MutableRawConfig {
  const raw = rawConfigFromStackFile(stackFilePath("lab"));
  return { values: structuredClone({ ...raw.values }), secretKeys: new Set(raw.secretKeys) };
}

/** The validated lab model; fails the test with every problem if the config does not validate. */
export function labModel(raw: RawStackConfig = labRawConfig()): EnvironmentModel {
  const { model, problems } = validateEnvironment("lab", raw, { requireSecrets: false });
  assert.deepEqual(problems, []);
  assert.ok(model);
  return model;
}

/**
 * The seeds' whole estate in one stack, the "everything" shape: the lab stack's config with the
 * `uat1` stack's nodes and downstream cluster added. Read from both shipped files, so it follows
 * them.
 */
export function estateRawConfig(): MutableRawConfig {
  const raw = labRawConfig();
  const uat1 = rawConfigFromStackFile(stackFilePath("uat1")).values as {
    nodes: unknown[];
    rancher: { downstreamClusters: unknown[] };
  };
  const values = raw.values as { nodes: unknown[]; rancher: Record<string, unknown> };
  values.nodes = [...values.nodes, ...structuredClone(uat1.nodes)];
  values.rancher.downstreamClusters = structuredClone(uat1.rancher.downstreamClusters);
  return raw;
}

/** The validated estate model (estateRawConfig). */
export function estateModel(raw: RawStackConfig = estateRawConfig()): EnvironmentModel {
  return labModel(raw);
}

/** The lab stack's `rancher` output, as its program exports it for the uat1 stack. */
export function labManagementOutputs(): ManagementStackOutputs {
  const outputs = managementStackOutputs(labModel());
  assert.ok(outputs);
  return outputs;
}

/** A fresh deep copy of the shipped uat1 stack's config, which names `managementStack`. */
export function uat1RawConfig(): MutableRawConfig {
  const raw = rawConfigFromStackFile(stackFilePath("uat1"));
  return { values: structuredClone({ ...raw.values }), secretKeys: new Set(raw.secretKeys) };
}

/**
 * The uat1 stack as a downstream stack without a reference has it: `managementStack` replaced by
 * the values of the lab stack's file (Rancher's URL and CA, its libvirt record and static answer).
 */
export function uat1StandaloneRawConfig(): MutableRawConfig {
  const raw = uat1RawConfig();
  const lab = labRawConfig().values as {
    rancher: { url: string; caCertificate: string };
    libvirt: { dnsRecords: Record<string, string[]> };
    dns: { staticHosts: Record<string, string[]> };
  };
  const values = raw.values as {
    managementStack?: string;
    rancher: Record<string, unknown>;
    libvirt: Record<string, unknown>;
    dns: Record<string, unknown>;
  };
  delete values.managementStack;
  values.rancher = {
    url: lab.rancher.url,
    caCertificate: lab.rancher.caCertificate,
    ...values.rancher,
  };
  values.libvirt.dnsRecords = { ...lab.libvirt.dnsRecords };
  values.dns.staticHosts = { ...lab.dns.staticHosts };
  return raw;
}

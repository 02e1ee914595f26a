/**
 * A preflight of live state as a dynamic provider: a read-only script on one host finds what is
 * wrong; creating (or updating) the resource fails while anything is, and `read` checks again,
 * so a fault that comes back shows up on refresh as a change.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { SshEndpoint } from "../model";
import { inputsDiffer, runHostScript } from "./run-script";

/** What every check's state holds besides its own inputs. */
export interface HostCheckState {
  readonly node: string;
  readonly connection: SshEndpoint;
  /** The key's fingerprint; the key comes from the stack's configuration (../ssh/host-material.ts). */
  readonly sshKeyFingerprint: string;
  /** Older state only: the key itself. */
  readonly sshPrivateKey?: string;
  readonly script: string;
}

export interface HostCheck<S extends HostCheckState> {
  /** Names the check in messages: "preflight on <node>". */
  readonly label: (state: S) => string;
  /** The state key holding the findings (empty when the check holds). */
  readonly findingsKey: keyof S & string;
  /** Inputs of the check itself, besides the connection, key and script. */
  readonly inputs: readonly (keyof S)[];
  readonly params: (state: S) => Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** What the script's output says is wrong, as recorded in state. */
  readonly findings: (stdout: string, state: S) => string[];
  /** The error when anything is wrong: the requirement, the findings, the incident it prevents. */
  readonly failure: (state: S, findings: readonly string[]) => string;
  readonly id: (state: S) => string;
}

export function hostCheckProvider<S extends HostCheckState>(
  check: HostCheck<S>,
): pulumi.dynamic.ResourceProvider {
  const run = async (state: S): Promise<string[]> => {
    const result = await runHostScript(state.connection, state, state.script, {
      label: check.label(state),
      params: check.params(state),
      timeoutMs: check.timeoutMs,
    });
    return check.findings(result.stdout, state);
  };
  const create = async (inputs: S) => {
    const found = await run(inputs);
    if (found.length > 0) throw new Error(check.failure(inputs, found));
    return { id: check.id(inputs), outs: { ...inputs, [check.findingsKey]: [] } };
  };
  return {
    async diff(_id: string, olds: S, news: S) {
      const findings = olds[check.findingsKey] as unknown as readonly string[];
      const keys: (keyof S)[] = [...check.inputs, "connection", "script", "sshKeyFingerprint"];
      return { changes: findings.length > 0 || inputsDiffer(olds, news, keys) };
    },
    create,
    async read(id: string, props: S) {
      return { id, props: { ...props, [check.findingsKey]: await run(props) } };
    },
    async update(_id: string, _olds: S, news: S) {
      return { outs: (await create(news)).outs };
    },
    async delete() {},
  };
}

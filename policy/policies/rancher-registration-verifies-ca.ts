import { ResourceValidationPolicy } from "@pulumi/policy";
import { caChecksumOf, skipsTlsVerification } from "../../components/rancher-cluster/registration";
import { RANCHER_NODE_REGISTRATION, REMOTE_COMMAND_TYPE } from "../../components/model";
import { knownProp, objectProp } from "./props";

/** Rancher's node command: it installs rancher-system-agent, which registers the node. */
const AGENT_INSTALL = /system-agent-install\.sh/;

/** How a registration command fails to verify Rancher's CA; empty when it verifies it. */
export function caVerificationGaps(command: string, expectedChecksum?: string): string[] {
  const gaps: string[] = [];
  if (skipsTlsVerification(command)) {
    gaps.push("fetches the agent installer with certificate checks off (curl --insecure)");
  }
  const checksum = caChecksumOf(command);
  if (!checksum) {
    gaps.push("passes no --ca-checksum");
  } else if (expectedChecksum && checksum !== expectedChecksum.toLowerCase()) {
    gaps.push(`passes --ca-checksum ${checksum}, not the stack's Rancher CA (${expectedChecksum})`);
  }
  return gaps;
}

const knownString = (props: Record<string, unknown>, name: string): string | undefined => {
  const value = knownProp(props, name);
  return typeof value === "string" ? value : undefined;
};

/** What registers a node and what is wrong with its CA verification. */
function registrationGaps(
  type: string,
  name: string,
  props: Record<string, unknown>,
): { who: string; gaps: string[] } | undefined {
  if (type === RANCHER_NODE_REGISTRATION.token) {
    const node = String(props.node ?? objectProp(props, "connection")?.host ?? name);
    const gaps = knownProp(props, "insecure") === true ? ["is set to insecure"] : [];
    // A preview usually does not know the command yet (it comes from the cluster's token).
    const command = knownString(props, "registrationCommand");
    if (command !== undefined) {
      gaps.push(...caVerificationGaps(command, knownString(props, "caChecksum")));
    }
    return { who: `registration of ${node} into ${String(props.cluster ?? "its cluster")}`, gaps };
  }
  if (type === REMOTE_COMMAND_TYPE) {
    const commands = ["create", "update"]
      .map((field) => knownString(props, field))
      .filter((c): c is string => c !== undefined && AGENT_INSTALL.test(c));
    if (commands.length === 0) return undefined;
    const host = String(objectProp(props, "connection")?.host ?? "its host");
    return {
      who: `${name} (Rancher registration on ${host})`,
      gaps: [...new Set(commands.flatMap((c) => caVerificationGaps(c)))],
    };
  }
  return undefined;
}

export const rancherRegistrationVerifiesCa: ResourceValidationPolicy = {
  name: "rancher-registration-verifies-ca",
  description:
    "Every Rancher node registration verifies Rancher's CA with --ca-checksum and never fetches the agent with certificate checks off.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    const found = registrationGaps(args.type, args.name, args.props);
    if (!found || found.gaps.length === 0) return;
    reportViolation(
      `${found.who} ${found.gaps.join("; ")}. Registration must verify Rancher's CA with --ca-checksum: Rancher's ` +
        "certificate comes from its own CA (self-signed in seed 000), and the insecure command trusts any certificate, " +
        "so anyone in the path can capture the cluster's registration token and join machines of their own. " +
        "A stack that really needs it (insecureRegistration) can make this policy advisory with --policy-pack-config.",
    );
  },
};

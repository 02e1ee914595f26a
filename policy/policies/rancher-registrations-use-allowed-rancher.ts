import { ResourceValidationPolicy } from "@pulumi/policy";
import { configList } from "./config-lists";
import { RANCHER_NODE_REGISTRATION, urlHost } from "../../components/model";
import { isUnknownProp } from "./props";

/** The rancher2 provider's resource: its `apiUrl` is the Rancher the clusters are created in. */
const RANCHER_PROVIDER_TYPE = "pulumi:providers:rancher2";

export const rancherRegistrationsUseAllowedRancher: ResourceValidationPolicy = {
  name: "rancher-registrations-use-allowed-rancher",
  description:
    "Downstream clusters are created in, and their nodes registered with, a Rancher whose host the policy pack's config allows (allowedRancherHosts); with no list configured, any Rancher is allowed.",
  enforcementLevel: "mandatory",
  configSchema: {
    properties: {
      allowedRancherHosts: configList(
        "Host names (or addresses) of the estate's Rancher servers, as in rancher.url. Empty: any.",
        "^[A-Za-z0-9.:-]+$",
      ),
    },
  },
  validateResource: (args, reportViolation) => {
    const { allowedRancherHosts } = args.getConfig<{ allowedRancherHosts: string[] }>();
    if (allowedRancherHosts.length === 0) return;
    const key =
      args.type === RANCHER_NODE_REGISTRATION.token
        ? "rancherUrl"
        : args.type === RANCHER_PROVIDER_TYPE
          ? "apiUrl"
          : undefined;
    // Judged once the preview knows the URL (a managementStack reference may supply it).
    if (key === undefined || isUnknownProp(args.props, key)) return;
    const url = args.props[key];
    if (url === undefined) return;
    const host = urlHost(url);
    if (host !== undefined && allowedRancherHosts.some((h) => h.toLowerCase() === host)) return;
    const subject =
      key === "rancherUrl"
        ? `${String(args.props.node)}'s registration in cluster ${String(args.props.cluster)}`
        : `the rancher2 provider ${args.name}`;
    reportViolation(
      `${subject} uses the Rancher at ${String(url)}, whose host the policy pack's config does not allow ` +
        `(allowedRancherHosts: ${allowedRancherHosts.join(", ")}): a node registered with another Rancher joins ` +
        "a cluster the estate's Rancher does not manage, and its agent gets that Rancher's plans. Set rancher.url " +
        "(or the management stack's) to the estate's Rancher, or add its host to allowedRancherHosts.",
    );
  },
};

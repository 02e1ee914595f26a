import { ResourceValidationPolicy } from "@pulumi/policy";
import { RKE2_CONFIG_PATH, RKE2_NODE_START } from "../../components/model";

export const rke2TokenKeptSecret: ResourceValidationPolicy = {
  name: "rke2-token-kept-secret",
  description: "An RKE2 config that carries the join token is stored as a Pulumi secret.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    // The node step carries the config.yaml keys it writes as its `config` input.
    if (args.type !== RKE2_NODE_START.token) return;
    if (!/^token:/m.test(String(args.props.config ?? ""))) return;
    if (!args.opts.additionalSecretOutputs.includes("config")) {
      reportViolation(
        `${String(args.props.node)}'s ${RKE2_CONFIG_PATH} carries the join token but is not a secret: the token would sit ` +
          "in plain text in the stack's state, and anyone with it can join a server to the cluster.",
      );
    }
  },
};

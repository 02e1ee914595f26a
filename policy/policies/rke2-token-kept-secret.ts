import { ResourceValidationPolicy } from "@pulumi/policy";
import { REMOTE_FILE, RKE2_CONFIG_PATH } from "../../components/model";

export const rke2TokenKeptSecret: ResourceValidationPolicy = {
  name: "rke2-token-kept-secret",
  description: "An RKE2 config that carries the join token is stored as a Pulumi secret.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (args.type !== REMOTE_FILE.token || args.props.path !== RKE2_CONFIG_PATH) return;
    if (!/^token:/m.test(String(args.props.content ?? ""))) return;
    if (!args.opts.additionalSecretOutputs.includes("content")) {
      reportViolation(
        `${String(args.props.host)}'s ${RKE2_CONFIG_PATH} carries the join token but is not a secret: the token would sit ` +
          "in plain text in the stack's state, and anyone with it can join a server to the cluster.",
      );
    }
  },
};

import { ResourceValidationPolicy } from "@pulumi/policy";
import { SSH_RESOURCE_TYPES } from "../../components/model";
import { objectProp } from "./props";

const KEY_LINE = /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,3}$/;

export const sshHostKeyPinned: ResourceValidationPolicy = {
  name: "ssh-host-key-pinned",
  description: "Every SSH connection the stack opens verifies a pinned host key.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    if (!SSH_RESOURCE_TYPES.includes(args.type)) return;
    const connection = objectProp(args.props, "connection");
    const hostKey = connection?.hostKey;
    if (typeof hostKey !== "string" || !KEY_LINE.test(hostKey.trim())) {
      reportViolation(
        `SSH to ${String(connection?.host ?? "this host")} must pin the host key ("ssh-ed25519 AAAA..."); ` +
          "without it the session trusts whoever answers, and the private key and tokens go to them.",
      );
    }
  },
};

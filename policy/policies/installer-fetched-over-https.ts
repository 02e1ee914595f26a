import { ResourceValidationPolicy } from "@pulumi/policy";
import { remoteCommandTexts } from "./props";
import { REMOTE_COMMAND_TYPE, RKE2_NODE_START } from "../../components/model";

/**
 * A download over plain `http://` (curl or wget) piped into a shell: whoever sits on the path
 * between the node and that server chooses what runs as root. RKE2's own installer is served
 * over HTTPS (https://get.rke2.io).
 */
const PIPES_HTTP_TO_SHELL =
  /\b(curl|wget)\b[^|;&\n]*\bhttp:\/\/[^|;&\n]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:\/usr)?(?:\/bin\/)?(?:ba|da|z|k)?sh\b/;

function commands(type: string, props: Record<string, unknown>): string[] {
  if (type === RKE2_NODE_START.token) return [String(props.installCommand ?? "")];
  if (type === REMOTE_COMMAND_TYPE) return remoteCommandTexts(props);
  return [];
}

export const installerFetchedOverHttps: ResourceValidationPolicy = {
  name: "installer-fetched-over-https",
  description:
    "The RKE2 install command and remote commands never pipe a download over plain http:// into a shell.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    for (const text of commands(args.type, args.props)) {
      const hit = text.split("\n").find((line) => PIPES_HTTP_TO_SHELL.test(line));
      if (hit) {
        reportViolation(
          `"${hit.trim()}" runs as root what a plain http:// download returns, which anyone on the path can change. ` +
            "Fetch the installer over https:// (RKE2's is https://get.rke2.io), or from a mirror that serves HTTPS.",
        );
      }
    }
  },
};

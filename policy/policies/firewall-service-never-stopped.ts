import { ResourceValidationPolicy } from "@pulumi/policy";
import { NODE_PREPARATION, REMOTE_COMMAND_TYPE, RKE2_NODE_START } from "../../components/model";
import { scriptText } from "../../components/assets";

/**
 * `systemctl stop iptables`, `disable --now ip6tables`, `restart iptables`, with any unit suffix.
 * Only the iptables units are matched: `systemctl disable --now firewalld` passes, because node
 * preparation stops firewalld only after checking that its stop removes no rule but its own
 * (firewalld/firewalld@v2.0.0 src/firewall/core/fw.py, may_skip_flush_direct_backends); a stop of
 * iptables.service always flushes every table.
 */
const STOPS_FIREWALL =
  /systemctl\s+(?:[^;&|\n]*\s)?(stop|restart|try-restart|reload-or-restart|disable\s+--now|mask\s+--now|--now\s+(disable|mask))\b[^;&|\n]*\bip6?tables(\.service)?\b/;

/** Flushing the live ruleset, or loading the distribution's default rules back. */
const FLUSHES_RULES =
  /\bip6?tables\s+(?:-t\s+\w+\s+)?(-F|--flush)\b|\bip6?tables-restore\b[^\n]*\/etc\/sysconfig\/ip6?tables\b|\/usr\/libexec\/iptables\/ip6?tables\.init\b/;

/** A step records its script by reference (components/assets.ts): check the text it names. */
function script(props: Record<string, unknown>): string {
  return scriptText(String(props.script ?? ""), "firewall-service-never-stopped");
}

function commandTexts(type: string, props: Record<string, unknown>): string[] {
  if (type === NODE_PREPARATION.token) return [script(props)];
  if (type === RKE2_NODE_START.token) return [script(props), String(props.installCommand ?? "")];
  if (type === REMOTE_COMMAND_TYPE) {
    return ["create", "update", "delete"]
      .map((k) => props[k])
      .filter((v): v is string => typeof v === "string");
  }
  return [];
}

export const firewallServiceNeverStopped: ResourceValidationPolicy = {
  name: "firewall-service-never-stopped",
  description:
    "Node scripts and remote commands disable iptables.service and ip6tables.service but never stop or restart them, flush the ruleset or restore the default rules. Stopping firewalld is not refused.",
  enforcementLevel: "mandatory",
  validateResource: (args, reportViolation) => {
    let texts: string[];
    try {
      texts = commandTexts(args.type, args.props);
    } catch (err) {
      // A script that cannot be read or does not match its hash cannot be shown to be safe.
      reportViolation(`${args.urn}: ${(err as Error).message}`);
      return;
    }
    for (const text of texts) {
      const lines = text.split("\n").filter((line) => !line.trim().startsWith("#"));
      const hit = lines.find((line) => STOPS_FIREWALL.test(line) || FLUSHES_RULES.test(line));
      if (hit) {
        reportViolation(
          `"${hit.trim()}" stops, flushes or reloads the node's firewall: that removes every rule, including ` +
            "kube-proxy's and Calico's (seed 003). Disable iptables.service without --now and delete only the REJECT rules.",
        );
      }
    }
  },
};

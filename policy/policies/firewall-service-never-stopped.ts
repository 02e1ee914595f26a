import { ResourceValidationPolicy } from "@pulumi/policy";
import { remoteCommandTexts } from "./props";
import { NODE_PREPARATION, REMOTE_COMMAND_TYPE, RKE2_NODE_START } from "../../components/model";
import { scriptText } from "../../components/assets";

/**
 * `systemctl stop iptables`, `disable --now ip6tables`, `restart iptables`, `reload iptables`, with
 * any unit suffix; and the SysV form `service iptables stop|restart|condrestart|try-restart|reload`,
 * which runs the same unit actions (iptables-services' iptables.init reload loads the saved rules
 * back, flushing the live ones first).
 * Only the iptables units are matched: `systemctl disable --now firewalld` passes, because node
 * preparation stops firewalld only after checking that its stop removes no rule but its own
 * (firewalld/firewalld@v2.0.0 src/firewall/core/fw.py, may_skip_flush_direct_backends); a stop of
 * iptables.service always flushes every table.
 */
const STOPS_FIREWALL =
  /systemctl\s+(?:[^;&|\n]*\s)?(stop|restart|try-restart|reload|reload-or-restart|disable\s+--now|mask\s+--now|--now\s+(disable|mask))\b[^;&|\n]*\bip6?tables(\.service)?\b|\bservice\s+ip6?tables\s+(stop|restart|condrestart|try-restart|reload)\b/;

/**
 * Flushing the live ruleset: `iptables -F`; `iptables-restore` without `--noflush` (it flushes each
 * table its input names); the iptables init script; `nft flush ruleset|table|chain` and
 * `nft delete table` (on Rocky's iptables-nft, kube-proxy's and Calico's rules are nft rules);
 * `firewall-cmd --reload` or `--complete-reload`, which with firewalld's iptables backend flush
 * tables that are not firewalld's (firewalld/firewalld#863, the maintainers' answer).
 */
const FLUSHES_RULES =
  /\bip6?tables\s+(?:-t\s+\w+\s+)?(-F|--flush)\b|\bip6?tables-restore\b(?![^\n;&|]*(--noflush|\s-n\b))|\/usr\/libexec\/iptables\/ip6?tables\.init\b|\bnft\s+(?:-\S+\s+)*(flush\s+(ruleset|table|chain)|delete\s+table)\b|\bfirewall-cmd\s+(?:[^;&|\n]*\s)?--(complete-)?reload\b/;

/** A step records its script by reference (components/assets.ts): check the text it names. */
function script(props: Record<string, unknown>): string {
  return scriptText(String(props.script ?? ""), "firewall-service-never-stopped");
}

function commandTexts(type: string, props: Record<string, unknown>): string[] {
  if (type === NODE_PREPARATION.token) return [script(props)];
  if (type === RKE2_NODE_START.token) return [script(props), String(props.installCommand ?? "")];
  if (type === REMOTE_COMMAND_TYPE) return remoteCommandTexts(props);
  return [];
}

export const firewallServiceNeverStopped: ResourceValidationPolicy = {
  name: "firewall-service-never-stopped",
  description:
    "Node scripts, remote commands and the RKE2 install command disable iptables.service and ip6tables.service but never stop, restart or reload them (systemctl or service), flush the ruleset (iptables -F, iptables-restore without --noflush, nft flush or delete table, firewall-cmd --reload) or restore the default rules. Stopping firewalld is not refused.",
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

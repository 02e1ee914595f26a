/**
 * The incidents' causes, named from the facts doctor read on each host. Pure: the facts come in
 * parsed, the findings go out; ./diagnose.ts reads the facts.
 */
import type { EnvironmentModel, NodeSpec } from "../../components/model";
import type { NodeFacts as PreparationFacts } from "../../components/node-preparation/render";
import {
  missingDeviceSpecs,
  renderUnmanagedDevicesConfig,
} from "../../components/node-preparation/render";
import type { PortCheck } from "../../components/node-preparation/preflight";
import type { NodeFacts as Rke2Facts } from "../../components/rke2-cluster/start-plan";
import { isMemberList } from "../../components/rke2-cluster/start-plan";
import type { NamespaceEgressFacts } from "../../components/cluster-dns/egress-isolation";
import { dnsEgressGaps } from "./dns-egress";
import { type DnsHostRecord, dnsHostRecords } from "../../components/libvirt-dns/render";
import {
  type EtcdMember,
  type EtcdMemberList,
  findMember,
} from "../../components/rke2-cluster/etcd-members";

/** Which incident a cause is, or the kind of fact it is when it is none of them. */
export type CauseKind =
  | "seed 003: firewall"
  | "seed 003: NetworkManager"
  | "seed 003: etcd learner"
  | "seed 000: search domain"
  | "seed 000: cluster agent"
  | "seed 001: DNS egress policy"
  | "seed 004: upstream resolver"
  | "seed 004: forwarding loop"
  | "drift"
  | "host"
  | "unreachable";

export interface Finding {
  /** The node's name in the stack, or the KVM host's address. */
  readonly host: string;
  readonly cause: CauseKind;
  /** What is wrong, in a sentence. */
  readonly summary: string;
  /** The live fact that shows it. */
  readonly evidence: string;
  /** The stack key or step that fixes it. */
  readonly remedy: string;
}

/** A check that could not give an answer on a host, and why; it is not a cause. */
export interface Unchecked {
  readonly host: string;
  readonly check: string;
  readonly reason: string;
}

/** A fact that was read, or why it could not be. */
export type Read<T> = { readonly ok: T } | { readonly error: string };

/** One line of search-domain-probe.sh. */
export interface SearchProbe {
  readonly via: "node" | "cluster";
  readonly domain: string;
  readonly server: string;
  readonly verdict: "answered" | "silent" | "unreachable";
  /** The rcode, when answered. */
  readonly rcode?: string;
  readonly ms: number;
}

/** One line of preflight-upstreams.sh. */
export interface UpstreamProbe {
  readonly upstream: string;
  readonly answered: boolean;
}

/** learner-log.sh's report: rke2-server's join retries in its recent log. */
export interface JoinLog {
  /** Retries on etcd's "too many learner members in cluster". */
  readonly learner: number;
  /** Retries on etcd's "unhealthy cluster". */
  readonly unhealthy: number;
  /** etcd's error in the latest retry. */
  readonly last?: string;
}

/** "3 join retries on ..., 1 on ..." */
function retries(log: JoinLog): string {
  const n = (count: number) => `${count} join ${count === 1 ? "retry" : "retries"}`;
  return (
    `${n(log.learner)} on "too many learner members in cluster", ` +
    `${n(log.unhealthy)} on "unhealthy cluster"`
  );
}

export function parseJoinLog(stdout: string): JoinLog {
  const value = (key: string) =>
    stdout
      .split("\n")
      .find((l) => l.startsWith(`${key}=`))
      ?.slice(key.length + 1);
  const count = (key: string) => {
    const n = Number(value(key));
    if (!Number.isInteger(n)) throw new Error(`the RKE2 log report lacks ${key}`);
    return n;
  };
  return { learner: count("learner"), unhealthy: count("unhealthy"), last: value("last") };
}

/** The DNS egress facts of the stack's policy namespaces, read on one server of a cluster. */
export interface ClusterEgress {
  readonly cluster: string;
  readonly namespaces: readonly NamespaceEgressFacts[];
  /** The node-local address pods send DNS to, when NodeLocalDNS is on. */
  readonly nodeLocalIp?: string;
}

/** What doctor read on one node; a check it did not run there is absent. */
export interface HostFacts {
  readonly node: NodeSpec;
  /** The SSH connection failed (or the host key differed): nothing else was read. */
  readonly unreachable?: string;
  readonly preparation?: Read<PreparationFacts>;
  readonly rke2?: Read<Rke2Facts>;
  /** The etcd client and peer ports of the other servers, probed from this one. */
  readonly etcdPorts?: Read<readonly PortCheck[]>;
  readonly search?: Read<readonly SearchProbe[]>;
  readonly upstreams?: Read<readonly UpstreamProbe[]>;
  /** Downstream nodes: the cluster agent's last log lines here (none where it has no pod). */
  readonly agentLog?: Read<readonly string[]>;
  /** kube-system CoreDNS logs on the node that end on the loop plugin's halt: `<pod>/<container>` and the line. */
  readonly loopLogs?: Read<readonly { readonly container: string; readonly line: string }[]>;
  /** Servers: rke2-server's recent join retries. */
  readonly joinLog?: Read<JoinLog>;
  /** The first server of a cluster: the policy namespaces' NetworkPolicies, pods and workloads. */
  readonly dnsEgress?: Read<ClusterEgress>;
}

export function parseSearchProbes(stdout: string): SearchProbe[] {
  return stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => (f[0] === "node" || f[0] === "cluster") && f.length >= 5)
    .map((f) => ({
      via: f[0] as SearchProbe["via"],
      domain: f[1],
      server: f[2],
      verdict: f[3] as SearchProbe["verdict"],
      ...(f[3] === "answered" ? { rcode: f[4] } : {}),
      ms: Number(f[f.length - 1]),
    }));
}

export function parseUpstreamProbes(stdout: string): UpstreamProbe[] {
  return stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 2 && (f[1] === "answered" || f[1] === "silent"))
    .map((f) => ({ upstream: f[0], answered: f[1] === "answered" }));
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const FIREWALL_REMEDY =
  "pulumi up (node preparation disables iptables.service and ip6tables.service without stopping " +
  "them, whose stop flushes every rule, and deletes exactly Rocky's REJECT rules)";

/** Seed 003's firewall and NetworkManager, and the node preparation the stack asks for. */
function preparationFindings(
  model: EnvironmentModel,
  node: NodeSpec,
  facts: PreparationFacts,
): Finding[] {
  const found: Finding[] = [];
  const add = (cause: CauseKind, summary: string, evidence: string, remedy: string) =>
    found.push({ host: node.name, cause, summary, evidence, remedy });
  const enabled = [
    ["iptables.service", facts.iptablesService],
    ["ip6tables.service", facts.ip6tablesService],
  ].filter(([, state]) => state === "enabled");
  if (enabled.length > 0 || facts.rejectRules > 0) {
    const parts = [
      ...(enabled.length > 0
        ? [
            `${enabled.map(([unit]) => unit).join(" and ")} enabled: the REJECT rules come back at the next boot`,
          ]
        : []),
      ...(facts.rejectRules > 0
        ? [
            `${facts.rejectRules} REJECT rule(s) in INPUT/FORWARD refuse RKE2's and etcd's traffic now`,
          ]
        : []),
    ];
    const kept =
      model.nodePreparation.firewalld === "keep" && facts.firewalldActive && facts.rejectRules > 0
        ? "; firewalld runs and nodePreparation.firewalld is keep, so the rules may be its own: open RKE2's ports in firewalld"
        : "";
    add(
      "seed 003: firewall",
      `Rocky's default firewall is in force: ${parts.join("; ")}`,
      [
        ...enabled.map(([unit]) => `systemctl is-enabled ${unit}: enabled`),
        ...(facts.rejectRules > 0
          ? [
              "iptables -S / ip6tables -S INPUT, FORWARD: -j REJECT --reject-with icmp-host-prohibited / icmp6-adm-prohibited",
            ]
          : []),
      ].join("; "),
      FIREWALL_REMEDY + kept,
    );
  }
  const desired = renderUnmanagedDevicesConfig(model.nodePreparation.unmanagedDevices);
  const missing = missingDeviceSpecs(facts.networkManagerConfig, desired);
  if (missing.length > 0)
    add(
      "seed 003: NetworkManager",
      `NetworkManager manages ${missing.map((s) => s.replace(/^interface-name:/, "")).join(", ")}: ` +
        "it takes kube-ipvs0's ClusterIPs down",
      facts.networkManagerConfig === ""
        ? "/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf is absent"
        : "/etc/NetworkManager/conf.d/99-rke2-unmanaged.conf leaves them out of unmanaged-devices",
      "nodePreparation.unmanagedDevices, written by node preparation on pulumi up (merged into the host's file)",
    );
  for (const finding of facts.hostFindings)
    add(
      "host",
      `the host does not fit its stack entry: ${finding}`,
      "node preparation's host checks (address, memory, CPUs, resolver)",
      "fix the host or its nodes[] entry; node preparation changes nothing while this holds",
    );
  if (model.nodePreparation.firewalld === "disable" && facts.firewalldService === "enabled")
    add(
      "drift",
      "firewalld.service is enabled, where the stack has it disabled",
      "systemctl is-enabled firewalld.service: enabled",
      "nodePreparation.firewalld: disable (pulumi up), or keep to leave it",
    );
  if (facts.nmCloudSetupService === "enabled" || facts.nmCloudSetupTimer === "enabled")
    add(
      "drift",
      "nm-cloud-setup is enabled; RKE2 needs it off",
      `nm-cloud-setup.service ${facts.nmCloudSetupService}, nm-cloud-setup.timer ${facts.nmCloudSetupTimer}`,
      "pulumi up (node preparation stops and disables it)",
    );
  if (model.nodePreparation.bringUpKubeIpvs && facts.kubeIpvs0 === "down")
    add(
      "drift",
      "kube-ipvs0 is down, where the stack brings it up",
      "ip link show kube-ipvs0: DOWN",
      "nodePreparation.bringUpKubeIpvs (pulumi up)",
    );
  if (facts.rebootRequired)
    add(
      "drift",
      "a reboot is owed: NetworkManager's drop-in changed after RKE2 was installed",
      "/var/lib/rke2-remediation/reboot-pending names this boot",
      "reboot the node (drain it first); nothing reboots it by itself",
    );
  return found;
}

/** RKE2 on a management node, against the release and role the stack gives it. */
function rke2Findings(model: EnvironmentModel, node: NodeSpec, facts: Rke2Facts): Finding[] {
  const role = node.roles.includes("server") ? "server" : "agent";
  const found: Finding[] = [];
  const want = model.management.version;
  if (want && facts.version !== "none" && facts.version !== want)
    found.push({
      host: node.name,
      cause: "drift",
      summary: `RKE2 ${facts.version} is installed, where the stack names ${want}`,
      evidence: "rke2 --version",
      remedy: "rke2.version: pulumi up upgrades one server at a time behind the join gate",
    });
  if (facts.unit && !facts.active)
    found.push({
      host: node.name,
      cause: "drift",
      summary: `rke2-${role}.service is installed but not running`,
      evidence: `systemctl is-active rke2-${role}.service: inactive`,
      remedy: `pulumi up starts it (servers one at a time); its log says why it stopped`,
    });
  return found;
}

/** A member as an operator names it: the server it is, else its etcd name and ID. */
function memberLabel(member: EtcdMember, servers: readonly ServerView[]): string {
  const server = servers.find((s) => s.member?.id === member.id);
  return server ? server.node.name : `member ${member.name || "(not started)"} ${member.id}`;
}

interface ServerView {
  readonly node: NodeSpec;
  readonly facts: Rke2Facts;
  readonly member?: EtcdMember;
}

/**
 * Seed 003's learner deadlock: etcd admits one learner at a time, and RKE2 retries a join while
 * etcd answers "too many learner members in cluster" or reports the cluster unhealthy
 * (k3s-io/k3s pkg/etcd/etcd.go Start and join, the release-1.35 commit that
 * rancher/rke2@v1.35.7+rke2r1 pins; RKE2 promotes a learner only once it has caught up with the
 * leader, which a learner behind a REJECT rule never does).
 */
export function learnerFindings(hosts: readonly HostFacts[]): {
  findings: Finding[];
  unchecked: Unchecked[];
} {
  const servers = hosts.filter(
    (h) => h.node.roles.includes("server") && h.rke2 !== undefined && "ok" in h.rke2,
  );
  const withList = servers.find((h) => isMemberList((h.rke2 as { ok: Rke2Facts }).ok.ownMembers));
  const running = servers.filter((h) => (h.rke2 as { ok: Rke2Facts }).ok.active);
  if (!withList) {
    return {
      findings: running.flatMap((h): Finding[] => {
        const log = h.joinLog && "ok" in h.joinLog ? h.joinLog.ok : undefined;
        if (!log || log.learner + log.unhealthy === 0) return [];
        return [
          {
            host: h.node.name,
            cause: "seed 003: etcd learner",
            summary:
              "rke2-server runs but its join is held up by etcd, and no server's etcd answers a member list",
            evidence: `rke2-server's log: ${retries(log)}`,
            remedy:
              "open etcd's ports between the servers (node preparation, pulumi up); do not delete etcd data by hand",
          },
        ];
      }),
      unchecked: running.map((h) => ({
        host: h.node.name,
        check: "etcd membership",
        reason: "no server's etcd answered a member list",
      })),
    };
  }
  const list = (withList.rke2 as { ok: Rke2Facts }).ok.ownMembers as EtcdMemberList;
  const views: ServerView[] = servers.map((h) => {
    const facts = (h.rke2 as { ok: Rke2Facts }).ok;
    const match = findMember(list, {
      onDiskName: typeof facts.etcdName === "string" ? facts.etcdName : undefined,
      addresses: facts.addresses.length > 0 ? facts.addresses : [h.node.ip],
      nodeNames: [h.node.name, facts.hostName],
    });
    return { node: h.node, facts, member: match?.member };
  });
  const evidenceOf = `etcdctl member list, read on ${withList.node.name}`;
  const findings: Finding[] = [];
  const learners = list.members.filter((m) => m.isLearner);
  for (const learner of learners) {
    findings.push({
      host: views.find((v) => v.member?.id === learner.id)?.node.name ?? withList.node.name,
      cause: "seed 003: etcd learner",
      summary: `${memberLabel(learner, views)} is an etcd learner that has not been promoted; etcd admits one learner at a time, so no other server can join`,
      evidence: `${evidenceOf}: ${learner.name || "(not started)"} ${learner.id} isLearner=true`,
      remedy:
        "open etcd's ports between the servers (node preparation, pulumi up); RKE2 promotes the " +
        "learner once it has caught up, and the stack's join gate then lets the next server in",
    });
  }
  // A member the other servers cannot reach on etcd's peer port holds the cluster too.
  const unreachableMembers = views.filter(
    (v) =>
      v.member &&
      !v.member.isLearner &&
      hosts.some(
        (h) =>
          h.node.name !== v.node.name &&
          h.etcdPorts !== undefined &&
          "ok" in h.etcdPorts &&
          h.etcdPorts.ok.some(
            (c) =>
              c.peer === v.node.ip &&
              c.port === 2380 &&
              c.verdict !== "open" &&
              c.verdict !== "closed",
          ),
      ),
  );
  const logOf = (node: NodeSpec): string => {
    const read = hosts.find((h) => h.node.name === node.name)?.joinLog;
    if (!read || !("ok" in read) || read.ok.learner + read.ok.unhealthy === 0) return "";
    const log = read.ok;
    return `; rke2-server's log: ${retries(log)}${log.last ? `, the latest "${log.last}"` : ""}`;
  };
  for (const view of views) {
    if (!view.facts.active || view.member) continue;
    const blockers = [
      ...learners.map((m) => `${memberLabel(m, views)}, the learner`),
      ...unreachableMembers.map((v) => `${v.node.name}, a member the others cannot reach on 2380`),
    ];
    findings.push({
      host: view.node.name,
      cause: "seed 003: etcd learner",
      summary:
        `rke2-server runs but ${view.node.name} is not in etcd's member list` +
        (blockers.length > 0 ? `: it is stuck behind ${blockers.join(" and ")}` : ""),
      evidence: `${evidenceOf}: no member with its name, addresses or on-disk member name${logOf(view.node)}`,
      remedy:
        "fix the firewall first (node preparation, pulumi up); RKE2 keeps retrying its join and " +
        "gets in once every member is reachable and no learner is left. Do not delete etcd data by hand",
    });
  }
  return { findings, unchecked: [] };
}

/** Seed 003's ports: the servers whose etcd ports this one cannot reach, in one finding. */
function portFindings(
  node: NodeSpec,
  checks: readonly PortCheck[],
  hosts: readonly HostFacts[],
): Finding[] {
  const nameOf = (ip: string) => hosts.find((h) => h.node.ip === ip)?.node.name ?? ip;
  const blocked = checks.filter((c) => c.verdict === "prohibited" || c.verdict === "timeout");
  if (blocked.length === 0) return [];
  const peers = [...new Set(blocked.map((c) => c.peer))];
  const portsOf = (peer: string) =>
    blocked
      .filter((c) => c.peer === peer)
      .map(
        (c) =>
          `${c.port} ${c.verdict === "prohibited" ? "no route to host (an ICMP reject)" : "no answer (a DROP)"}`,
      )
      .join(", ");
  return [
    {
      host: node.name,
      cause: "seed 003: firewall",
      summary: `${node.name} cannot reach etcd's ports on ${peers.map(nameOf).join(", ")}`,
      evidence: peers.map((p) => `TCP to ${p}: ${portsOf(p)}`).join("; ") + ` (from ${node.ip})`,
      remedy: `${FIREWALL_REMEDY}, on ${peers.map(nameOf).join(" and ")}`,
    },
  ];
}

/** Seed 000: a search domain nobody answers, and whether the cluster DNS answers it instead. */
function searchFindings(
  model: EnvironmentModel,
  node: NodeSpec,
  probes: readonly SearchProbe[],
): { findings: Finding[]; unchecked: Unchecked[] } {
  const findings: Finding[] = [];
  const unchecked: Unchecked[] = [];
  const name = model.rancher?.hostname ?? "";
  for (const probe of probes.filter((p) => p.via === "node" && p.verdict === "silent")) {
    const cluster = probes.find((p) => p.via === "cluster" && p.domain === probe.domain);
    if (cluster?.verdict === "answered") continue;
    if (!cluster || cluster.verdict === "unreachable") {
      unchecked.push({
        host: node.name,
        check: "seed 000: cluster DNS",
        reason:
          `the node's resolver ${probe.server} left ${name}.${probe.domain} unanswered for ${seconds(probe.ms)}; ` +
          (cluster
            ? `the cluster DNS ${cluster.server} cannot be reached from the node`
            : "the stack gives this node's cluster no cluster DNS"),
      });
      continue;
    }
    const listed = model.dns.neutralizedSearchDomains.includes(probe.domain);
    findings.push({
      host: node.name,
      cause: "seed 000: search domain",
      summary:
        `lookups of ${name} wait out a timeout: the nodes search "${probe.domain}", which neither ` +
        "the node's resolver nor the cluster DNS answers, and pods (ndots:5) try it first",
      evidence:
        `dig ${name}.${probe.domain}: no answer from ${probe.server} in ${seconds(probe.ms)}, ` +
        `none from the cluster DNS ${cluster.server} in ${seconds(cluster.ms)}`,
      remedy: listed
        ? `dns.neutralizedSearchDomains lists "${probe.domain}" but the cluster's CoreDNS does not apply it: pulumi up delivers the HelmChartConfig; check the rke2-coredns rollout`
        : `add "${probe.domain}" to dns.neutralizedSearchDomains and pulumi up (the cluster DNS then answers NXDOMAIN at once)`,
    });
  }
  return { findings, unchecked };
}

/**
 * Seed 000 in the cluster agent's own words: its latest attempt failed to look up Rancher's host
 * (`lookup <host>: i/o timeout` or `no such host`; rancher/rancher@v2.14.3 cmd/agent/main.go
 * logs each failed dial), with no "Connected to proxy" after it.
 */
function agentLogFindings(
  model: EnvironmentModel,
  node: NodeSpec,
  lines: readonly string[],
): Finding[] {
  const host = model.rancher?.hostname;
  if (!host) return [];
  const lastWhere = (test: (l: string) => boolean) =>
    lines.reduce((last, l, i) => (test(l) ? i : last), -1);
  const failed = lastWhere(
    (l) => l.includes(`lookup ${host}`) && /i\/o timeout|no such host/.test(l),
  );
  const connected = lastWhere((l) => l.includes("Connected to proxy"));
  if (failed < 0 || connected > failed) return [];
  return [
    {
      host: node.name,
      cause: "seed 000: cluster agent",
      summary: `the cluster agent that runs here cannot look up Rancher's host ${host}`,
      evidence: `cattle-cluster-agent's log: ${lines[failed].trim().slice(0, 300)}`,
      remedy:
        "dns.staticHosts answers Rancher's name in the cluster DNS and dns.neutralizedSearchDomains " +
        "makes the unanswered domain fail fast (pulumi up puts both in the cluster's chartValues)",
    },
  ];
}

export function parseLoopLogs(stdout: string): { container: string; line: string }[] {
  return stdout
    .split("\n")
    .filter((l) => l.startsWith("loop "))
    .map((l) => {
      const [, container, ...line] = l.split(" ");
      return { container, line: line.join(" ") };
    });
}

/** Seed 004's crash loop: a CoreDNS of kube-system on the node that its loop plugin halted. */
function loopFindings(
  node: NodeSpec,
  logs: readonly { readonly container: string; readonly line: string }[],
): Finding[] {
  return logs.map((l) => ({
    host: node.name,
    cause: "seed 004: forwarding loop" as const,
    summary:
      `a CoreDNS of kube-system on this node (${l.container.split("_")[1] ?? l.container}) stopped on a ` +
      "forwarding loop: its own probe came back to it, so it forwards to itself",
    evidence: `its log: ${l.line.replace(/^\S+ std(out|err) [FP] /, "")}`,
    remedy:
      "forward to resolvers outside the cluster that answer, never to the cache's own address or a " +
      "resolv.conf that leads back to it: dns.upstreamResolvers (pulumi up); validation refuses such targets",
  }));
}

function upstreamFindings(node: NodeSpec, probes: readonly UpstreamProbe[]): Finding[] {
  return probes
    .filter((p) => !p.answered)
    .map((p) => ({
      host: node.name,
      cause: "seed 004: upstream resolver" as const,
      summary: `upstream resolver ${p.upstream} does not answer: every lookup the cluster DNS forwards to it waits out the forward timeout`,
      evidence: `dig @${p.upstream} <random>.<random>.in-addr.arpa HINFO from ${node.ip}: no answer in 2 s`,
      remedy: "dns.upstreamResolvers: resolvers that answer, at least two (pulumi up)",
    }));
}

function gapText(
  gap: ReturnType<typeof dnsEgressGaps>[number]["gap"],
  nodeLocalIp?: string,
): string {
  switch (gap) {
    case "TCP only":
      return "may ask DNS over TCP only: no egress rule allows UDP 53, and resolvers ask over UDP first";
    case "no DNS":
      return "cannot ask DNS at all: no egress rule allows port 53";
    case "no node-local address":
      return (
        `cannot reach the node-local DNS address ${nodeLocalIp ?? ""}, where NodeLocalDNS sends ` +
        "their queries: no rule that allows UDP 53 has an ipBlock holding it"
      );
  }
}

/** Seed 001: isolated pods cut off from DNS in the stack's policy namespaces. */
function dnsEgressFindings(
  model: EnvironmentModel,
  node: NodeSpec,
  egress: ClusterEgress,
): Finding[] {
  return egress.namespaces.flatMap((ns) =>
    dnsEgressGaps(ns, egress.nodeLocalIp).map((gap) => ({
      host: node.name,
      cause: "seed 001: DNS egress policy" as const,
      summary:
        `in namespace ${ns.namespace} of cluster ${egress.cluster}, ${gap.subjects.join(", ")} ` +
        gapText(gap.gap, egress.nodeLocalIp),
      evidence: `NetworkPolicies selecting them: ${gap.policies.join(", ")} (read with RKE2's kubectl on ${node.name})`,
      remedy: model.dns.policyNamespaces.some((p) => p.name === ns.namespace)
        ? `pulumi up with deploy.clusterDns on: dns.policyNamespaces lists ${ns.namespace}, where allow-dns-egress allows UDP and TCP 53 to the cluster DNS and the node-local address`
        : `add ${ns.namespace} to dns.policyNamespaces and pulumi up`,
    })),
  );
}

/** What doctor read on the KVM host: the libvirt network's DNS records, or why it could not. */
export interface KvmFacts {
  /** The KVM host as findings name it: `libvirt on <address>`. */
  readonly host: string;
  readonly unreachable?: string;
  readonly records?: Read<readonly DnsHostRecord[]>;
}

/** Drift on the libvirt network: a name the stack records at an address it does not answer. */
function libvirtFindings(model: EnvironmentModel, kvm: KvmFacts): Finding[] {
  if (kvm.unreachable !== undefined)
    return [
      {
        host: kvm.host,
        cause: "unreachable",
        summary: "doctor could not read the KVM host",
        evidence: kvm.unreachable,
        remedy: "check the host, its address and its pinned host key (libvirt.ssh.hostKey)",
      },
    ];
  if (!kvm.records || !("ok" in kvm.records)) return [];
  const live = kvm.records.ok;
  return dnsHostRecords(model.libvirt.dnsRecords).flatMap((want) => {
    const found = live.find((r) => r.ip === want.ip);
    const missing = want.hostnames.filter((h) => !found?.hostnames.includes(h));
    if (missing.length === 0) return [];
    return [
      {
        host: kvm.host,
        cause: "drift" as const,
        summary: `the libvirt network ${model.libvirt.network} does not answer ${missing.join(", ")} with ${want.ip}`,
        evidence: found
          ? `virsh net-dumpxml ${model.libvirt.network}: <host ip='${want.ip}'> names ${found.hostnames.join(", ")}`
          : `virsh net-dumpxml ${model.libvirt.network}: no <host ip='${want.ip}'>`,
        remedy:
          "libvirt.dnsRecords: pulumi up adds the record (seed 000: nodes resolve Rancher through it)",
      },
    ];
  });
}

/** Every cause the facts show, host by host, and the checks that could not answer. */
export function causesOf(
  model: EnvironmentModel,
  hosts: readonly HostFacts[],
  kvm?: KvmFacts,
): { findings: Finding[]; unchecked: Unchecked[] } {
  const findings: Finding[] = [];
  const unchecked: Unchecked[] = [];
  const check = <T>(
    host: HostFacts,
    name: string,
    read: Read<T> | undefined,
    use: (t: T) => void,
  ) => {
    if (read === undefined) return;
    if ("error" in read) unchecked.push({ host: host.node.name, check: name, reason: read.error });
    else use(read.ok);
  };
  for (const host of hosts) {
    if (host.unreachable !== undefined) {
      findings.push({
        host: host.node.name,
        cause: "unreachable",
        summary: "doctor could not read this host",
        evidence: host.unreachable,
        remedy: "check the host, its address and its pinned host key (nodes[].ssh.hostKey)",
      });
      continue;
    }
    check(host, "node preparation", host.preparation, (f) =>
      findings.push(...preparationFindings(model, host.node, f)),
    );
    check(host, "RKE2", host.rke2, (f) => findings.push(...rke2Findings(model, host.node, f)));
    check(host, "etcd ports", host.etcdPorts, (c) =>
      findings.push(...portFindings(host.node, c, hosts)),
    );
    check(host, "seed 000: search domains", host.search, (p) => {
      const r = searchFindings(model, host.node, p);
      findings.push(...r.findings);
      unchecked.push(...r.unchecked);
    });
    check(host, "seed 004: upstream resolvers", host.upstreams, (p) =>
      findings.push(...upstreamFindings(host.node, p)),
    );
    check(host, "seed 003: RKE2's log", host.joinLog, () => undefined);
    check(host, "seed 004: CoreDNS logs", host.loopLogs, (l) =>
      findings.push(...loopFindings(host.node, l)),
    );
    check(host, "seed 000: cluster agent's log", host.agentLog, (l) =>
      findings.push(...agentLogFindings(model, host.node, l)),
    );
    check(host, "seed 001: DNS egress policies", host.dnsEgress, (e) =>
      findings.push(...dnsEgressFindings(model, host.node, e)),
    );
  }
  if (kvm) {
    findings.push(...libvirtFindings(model, kvm));
    if (kvm.records && "error" in kvm.records)
      unchecked.push({ host: kvm.host, check: "libvirt DNS records", reason: kvm.records.error });
  }
  const learners = learnerFindings(hosts);
  findings.push(...learners.findings);
  unchecked.push(...learners.unchecked);
  const order = new Map(hosts.map((h, i) => [h.node.name, i]));
  findings.sort((a, b) => (order.get(a.host) ?? -1) - (order.get(b.host) ?? -1));
  return { findings, unchecked };
}

#!/usr/bin/env python3
"""Helpers for bench/run (Python 3 standard library only).

  dns          timed lookups through the resolver of the namespace it runs in (glibc
               getaddrinfo, AF_UNSPEC: the call `getent ahosts` makes, search list and ndots
               included); prints JSON
  ssh-count    "Accepted publickey" lines per lab host in the lab's sshd logs; prints JSON
  ssh-ops      SSH-backed resources per host in a `pulumi stack export` (stdin); prints JSON
  ssh-summary  connections per host per operation, from two ssh-count files and an ssh-ops file
  cpu-hosts    CPU time (ms) the lab hosts' sshd have used, their finished sessions included
  cpu-profile  where the Node.js processes of a command spent their CPU, from the .cpuprofile
               files `node --cpu-prof` wrote (one per process); prints a Markdown summary
  record       appends one measurement (JSON line) to the measurements file
  report       writes results.json and results.md from the measurements file
"""

import argparse
import collections
import concurrent.futures
import json
import math
import os
import random
import re
import socket
import statistics
import sys
import time

LAB_NET = "192.168.122"


def percentile(values, p):
    """Nearest-rank percentile: the smallest value with at least p% of the samples at or below."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values):
    return statistics.median(values) if values else None


# --- dns ----------------------------------------------------------------------------------------


def lookup(name):
    started = time.perf_counter_ns()
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
        addrs, error = sorted({info[4][0] for info in infos}), None
    except socket.gaierror as err:
        addrs, error = [], err.strerror or str(err)
    return (time.perf_counter_ns() - started) / 1e6, addrs, error


def cmd_dns(args):
    expect = sorted(filter(None, args.expect.split(","))) if args.expect else []
    started = time.perf_counter_ns()
    if args.concurrency <= 1:
        results = [lookup(args.name) for _ in range(args.count)]
    else:
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            results = list(pool.map(lambda _: lookup(args.name), range(args.count)))
    total_ms = (time.perf_counter_ns() - started) / 1e6
    ms = [round(r[0], 3) for r in results]
    wrong = [r for r in results if r[2] is None and expect and not set(expect) <= set(r[1])]
    errors = collections.Counter(r[2] for r in results if r[2] is not None)
    answers = collections.Counter(",".join(r[1]) for r in results if r[2] is None)
    with open("/etc/resolv.conf", encoding="utf8") as f:
        resolv = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    json.dump(
        {
            "name": args.name,
            "count": args.count,
            "concurrency": args.concurrency,
            "resolv_conf": resolv,
            "total_ms": round(total_ms, 1),
            "p50_ms": percentile(ms, 50),
            "p99_ms": percentile(ms, 99),
            "min_ms": min(ms),
            "max_ms": max(ms),
            "mean_ms": round(statistics.mean(ms), 3),
            "failed": sum(errors.values()),
            "wrong_answers": len(wrong),
            "errors": dict(errors),
            "answers": dict(answers),
            "ms": ms,
        },
        sys.stdout,
    )
    print()


# --- ssh ----------------------------------------------------------------------------------------


def cmd_ssh_count(args):
    counts = {}
    for entry in sorted(os.listdir(args.logs)):
        m = re.fullmatch(r"sshd-(kvm|n(\d+))\.log", entry)
        if not m:
            continue
        host = f"{LAB_NET}.1" if m.group(1) == "kvm" else f"{LAB_NET}.{m.group(2)}"
        with open(os.path.join(args.logs, entry), encoding="utf8", errors="replace") as f:
            counts[host] = sum(1 for line in f if "Accepted publickey" in line)
    json.dump(counts, sys.stdout)
    print()


def cmd_ssh_ops(_args):
    """Every resource whose outputs carry an SSH `connection` opens one session per operation."""
    export = json.load(sys.stdin)
    ops = collections.Counter()
    for resource in export.get("deployment", {}).get("resources", []):
        connection = (resource.get("outputs") or {}).get("connection")
        if isinstance(connection, dict) and connection.get("host"):
            ops[connection["host"]] += 1
    json.dump(dict(ops), sys.stdout)
    print()


def load(path):
    with open(path, encoding="utf8") as f:
        return json.load(f)


def cmd_ssh_summary(args):
    before, after, ops = load(args.before), load(args.after), load(args.ops)
    per_host = {}
    for host in sorted(set(after) | set(ops)):
        conns = after.get(host, 0) - before.get(host, 0)
        if conns or ops.get(host):
            per_host[host] = {"connections": conns, "operations": ops.get(host, 0)}
    ratios = [v["connections"] / v["operations"] for v in per_host.values() if v["operations"]]
    json.dump(
        {
            "hosts": len(per_host),
            "connections": sum(v["connections"] for v in per_host.values()),
            "operations": sum(v["operations"] for v in per_host.values()),
            "max_per_operation": max(ratios) if ratios else None,
            "min_per_operation": min(ratios) if ratios else None,
            "off": {h: v for h, v in per_host.items() if v["connections"] != v["operations"]},
            "per_host": per_host,
        },
        sys.stdout,
    )
    print()


def cmd_cpu_hosts(args):
    """utime+stime+cutime+cstime of each lab sshd: sessions (sshd, bash, iptables-save, virsh)
    are its reaped descendants, so this is the hosts' side of every SSH operation."""
    tick = os.sysconf("SC_CLK_TCK")
    pidfiles = [os.path.join(args.lab_dir, "kvm", "ssh", "sshd.pid")]
    nodes = os.path.join(args.lab_dir, "nodes")
    pidfiles += [os.path.join(nodes, d, "sshd.pid") for d in sorted(os.listdir(nodes))]
    total = 0
    for pidfile in pidfiles:
        try:
            with open(pidfile, encoding="utf8") as f:
                pid = int(f.read().strip())
            with open(f"/proc/{pid}/stat", encoding="utf8") as f:
                stat = f.read()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += sum(int(x) for x in fields[11:15])
    print(round(total * 1000 / tick))


def cmd_peak_rss(args):
    """Runs the command (its output to --log) and prints the peak of the summed resident memory
    (KB) of its whole process tree, sampled every 100 ms; exits with the command's status."""
    import subprocess

    def tree_rss(root):
        children = collections.defaultdict(list)
        rss = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat", encoding="utf8") as f:
                    stat = f.read()
                with open(f"/proc/{pid}/status", encoding="utf8") as f:
                    status = f.read()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children[ppid].append(int(pid))
            m = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
            rss[int(pid)] = int(m.group(1)) if m else 0
        total, todo = 0, [root]
        while todo:
            pid = todo.pop()
            total += rss.get(pid, 0)
            todo += children.get(pid, [])
        return total

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    with open(args.log, "w", encoding="utf8") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.1)
    print(peak)
    sys.exit(proc.returncode)


# --- record and report ----------------------------------------------------------------------------


def cmd_record(args):
    row = {"section": args.section, "case": args.case, "command": args.command}
    for kv in args.kv or []:
        key, _, value = kv.partition("=")
        try:
            row[key] = json.loads(value)
        except json.JSONDecodeError:
            row[key] = value
    for kv in args.json or []:
        key, _, path = kv.partition("=")
        row[key] = load(path) if os.path.exists(path) else None
    with open(args.out, "a", encoding="utf8") as f:
        f.write(json.dumps(row) + "\n")


def fmt_ms(ms):
    if ms is None:
        return "n/a"
    if ms >= 10000:
        return f"{ms / 1000:.1f} s"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 10:
        return f"{ms:.0f} ms"
    return f"{ms:.1f} ms"


def verdict(ok):
    return {True: "met", False: "**missed**", None: "-"}[ok]


def dns_rows(rows, baseline):
    out = []
    labels = {
        "unfixed": "unfixed (chart default Corefile)",
        "seed": "seed 000's literal fix",
        "product": "product fix, CoreDNS direct (no NodeLocalDNS)",
        "product-nodelocal": "product fix behind NodeLocalDNS",
    }
    for r in rows:
        d = r.get("lookups") or {}
        cluster = f"{r.get('cluster_status')} {r.get('cluster_answer') or '-'}"
        unchanged = r.get("cluster_status") == "NOERROR" and r.get("cluster_answer") == baseline
        target = r["case"].startswith("product")
        ok = (d.get("p99_ms") is not None and d["p99_ms"] < 50 and unchanged) if target else None
        method = (
            f"{d.get('count')} lookups, {d.get('concurrency')} in parallel"
            if (d.get("concurrency") or 1) > 1
            else f"{d.get('count')} lookups, one after another"
        )
        failures = d.get("failed", 0) + d.get("wrong_answers", 0)
        result = (
            f"p50 {fmt_ms(d.get('p50_ms'))}, p99 {fmt_ms(d.get('p99_ms'))} ({method}"
            f"{f', {failures} failed' if failures else ''}); "
            f"kubernetes.default.svc.cluster.local: {cluster}"
            f"{'' if unchanged else ' (changed)'}"
        )
        out.append(
            (
                "1 DNS path",
                labels.get(r["case"], r["case"]),
                result,
                "p99 < 50 ms, cluster names unchanged" if target else "-",
                verdict(ok),
                r["command"],
            )
        )
    return out


def dns_api_rows(rows):
    out = []
    labels = {
        "kubernetes-fqdn": "kubernetes.default.svc.cluster.local (a Service name, 4 dots < ndots:5, so the search list is walked first)",
        "service-short": "a Service the bench creates with kubectl, by its short name through the search list",
        "rancher-search": "the Rancher name (ai-ear.cn) through the search list",
    }
    for r in rows:
        d = r.get("lookups") or {}
        failures = d.get("failed", 0) + d.get("wrong_answers", 0)
        ok = d.get("p99_ms") is not None and d["p99_ms"] < 50 and failures == 0
        answers = ", ".join(sorted(d.get("answers") or {})) or "-"
        result = (
            f"p50 {fmt_ms(d.get('p50_ms'))}, p99 {fmt_ms(d.get('p99_ms'))} ({d.get('count')} lookups, one after "
            f"another, via {r.get('resolver')}{f', {failures} failed or wrong' if failures else ''}); answer {answers}"
        )
        out.append(
            (
                "1b DNS path, kubernetes plugin",
                labels.get(r["case"], r["case"]),
                result,
                "p99 < 50 ms, every answer right",
                verdict(ok),
                r["command"],
            )
        )
    return out


def hcc_drift_rows(rows):
    out = []
    for r in rows:
        med, text = runs_summary(r)
        rcs = r.get("rc") or []
        if r["case"] == "clean":
            label, target = "drift check, nothing edited", "exit 0 (no changes)"
            ok = bool(rcs) and all(c == 0 for c in rcs)
            text = text.replace(" FAILED", " found changes")
        elif r["case"] == "edited":
            label, target = "drift check after a kubectl patch of the HelmChartConfig", "exit non-zero, rke2-coredns named"
            named = r.get("names_rke2_coredns") or []
            ok = bool(rcs) and all(c != 0 for c in rcs) and bool(named) and all(named)
            text = f"median {fmt_ms(med)} of {len(rcs)} ({', '.join(fmt_ms(m) for m in r.get('wall_ms') or [])}); exit codes {rcs}"
            text += "; rke2-coredns named in every run" if ok else f"; rke2-coredns named: {named}"
        else:
            label, target = "pulumi up --refresh repairing the edit", "exit 0"
            ok = bool(rcs) and all(c == 0 for c in rcs)
        out.append(("1c HelmChartConfig drift check", label, text + cpu_text(r), target, verdict(ok), r["command"]))
    return out


# Record sections each bench/run section writes.
RUN_SECTIONS = {
    "dns": ("dns",),
    "kubeapi": ("dns-api", "hcc-drift"),
    "converge": ("converge", "drift"),
    "scale": ("scale",),
    "floor": ("floor",),
    "joingate": ("joingate",),
    "peer": ("peer",),
    "largest": ("largest",),
}


def carry_previous(rows, meta, previous_path):
    """Rows and load figures of the sections this run did not measure, from the previous results."""
    if not previous_path or not os.path.exists(previous_path):
        return rows, []
    prev = load(previous_path)
    measured = set()
    for name in meta.get("sections", "").split():
        measured.update(RUN_SECTIONS.get(name, (name,)))
        if name == "dns":
            measured.update(RUN_SECTIONS["kubeapi"])
    kept = [r for r in prev.get("measurements", []) if r["section"] not in measured]
    if not kept:
        return rows, []
    pmeta = prev.get("meta", {})
    when = pmeta.get("carried_from") or f"{pmeta.get('date')} ({pmeta.get('source')})"
    for r in kept:
        r.setdefault("measured_on", when)
    dates = sorted({r["measured_on"] for r in kept})
    sections = sorted({r["section"] for r in kept})
    ran = set(meta.get("sections", "").split()) | ({"kubeapi"} if "dns" in meta.get("sections", "").split() else set())
    meta["load"] = list(meta.get("load", [])) + [
        f"{entry} (earlier run)" if "(earlier run)" not in entry else entry
        for entry in pmeta.get("load", [])
        if entry.split()[0] not in ran
    ]
    notes = [f"Rows of {', '.join(sections)} are carried over from the earlier run of {'; '.join(dates)}; this run did not measure them."]
    return rows + kept, notes


def runs_summary(r):
    ms = r.get("wall_ms") or []
    rcs = r.get("rc") or []
    bad = sum(1 for c in rcs if c != 0)
    return median(ms), f"median {fmt_ms(median(ms))} of {len(ms)} ({', '.join(fmt_ms(m) for m in ms)})" + (
        f", {bad} run(s) FAILED" if bad else ""
    )


def ssh_text(r):
    summaries = [s for s in (r.get("ssh") or []) if s]
    if not summaries:
        return "SSH not counted", None
    worst = max(s["max_per_operation"] or 0 for s in summaries)
    best = min(s["min_per_operation"] or 0 for s in summaries)
    last = summaries[-1]
    text = (
        f"SSH: {last['connections']} connections for {last['operations']} operations on "
        f"{last['hosts']} hosts; per host per operation {best:g}..{worst:g}"
    )
    return text, worst == 1 and best == 1


def cpu_text(r):
    cpu = [c for c in (r.get("cpu") or []) if c]
    if not cpu:
        return ""
    op = median([c["operator_ms"] for c in cpu])
    hosts = median([c["hosts_ms"] for c in cpu])
    return f"; CPU (medians): pulumi {fmt_ms(op)}, lab hosts' sshd sessions {fmt_ms(hosts)}"


def scaling_rows(rows, section, label, time_target):
    out = []
    by_n = {r["nodes"]: r for r in rows}
    if not by_n:
        return out
    smallest, largest = min(by_n), max(by_n)
    base_ms = runs_summary(by_n[smallest])[0]
    for n in sorted(by_n):
        r = by_n[n]
        med, text = runs_summary(r)
        ssh, ssh_ok = ssh_text(r)
        changed = r.get("changed_nodes")
        if changed:
            text += f"; nodes reporting changes: {'/'.join(str(c) for c in changed)}"
        text += f"; {ssh}{cpu_text(r)}"
        state = r.get("state_bytes")
        if state:
            size = median(state)
            text += f"; state {size / 1024:.0f} KB ({size / 1024 / n:.1f} KB per node)"
        failed = any(c != 0 for c in r.get("rc") or [1])
        verdicts = [f"SSH {verdict(ssh_ok)}"]
        target = "one SSH connection per host per operation"
        if n != smallest and med is not None and base_ms:
            ratio = med / base_ms
            text += f"; **{ratio:.2f}×** the {smallest}-node time"
            if n == largest:
                target = f"{time_target}; {target}"
                verdicts.insert(0, f"time {verdict(ratio <= 2)} ({ratio:.2f}×)")
        if failed:
            verdicts.insert(0, "**run failed**")
        out.append(
            (
                section,
                f"{label}, {n} node{'s' if n != 1 else ''}",
                text,
                target,
                "; ".join(verdicts),
                r["command"],
            )
        )
    return out


def scale_rows(rows):
    out = []
    by_n = {r["nodes"]: r for r in rows if r["case"].startswith("verify-")}
    meds = {n: runs_summary(r)[0] for n, r in by_n.items()}
    ns = sorted(by_n)
    linear = None
    note = ""
    if len(ns) == 3 and all(meds[n] for n in ns):
        a, b, c = ns
        first = (meds[b] - meds[a]) / (b - a)
        second = (meds[c] - meds[b]) / (c - b)
        linear = second <= 2 * max(first, 0.5)
        note = (
            f"; per added node {first:.1f} ms ({a}→{b}), {second:.1f} ms ({b}→{c})"
        )
    for n in ns:
        r = by_n[n]
        med, text = runs_summary(r)
        text += f"; {r.get('resources')} resources, {r.get('verdict')}"
        ok = None
        if n == max(ns):
            text += note
            ok = (med is not None and med < 10000 and linear is True and r.get("verdict") == "ok")
        out.append(
            (
                "4 Program scale",
                f"verify, {n} nodes",
                text,
                "linear, 300 nodes < 10 s" if n == max(ns) else "-",
                verdict(ok),
                r["command"],
            )
        )
    for r in rows:
        if r["case"] == "npm-verify-300":
            med, text = runs_summary(r)
            out.append(
                (
                    "4 Program scale",
                    "npm run verify, 300 nodes, including the TypeScript build",
                    text,
                    "300 nodes < 10 s, as npm run verify runs (build included)",
                    verdict(med is not None and med < 10000 and all(c == 0 for c in r.get("rc") or [1])),
                    r["command"],
                )
            )
    previews = {r["nodes"]: r for r in rows if r["case"].startswith("preview-")}
    for n in sorted(previews):
        r = previews[n]
        med, text = runs_summary(r)
        cpu = median(r.get("cpu_ms") or [])
        text += f"; {r.get('resources')} resources planned"
        if cpu is not None:
            text += f"; CPU (median) {fmt_ms(cpu)}"
        cpu_per = per_added_node({m: previews[m] for m in (min(previews), n)}, "cpu_ms")
        if n != min(previews) and cpu_per is not None:
            text += f"; {cpu_per:.1f} ms CPU per added node"
        out.append(measured_row("4 Program scale", f"pulumi preview (real CLI, empty state), {n} nodes", text, "measured (no target)", r))
    return out


def measured_row(section, label, text, target, r):
    """A row with no verdict but whether every run of it exited 0."""
    failed = any(c != 0 for c in r.get("rc") or [1])
    return (section, label, text, target, "**run failed**" if failed else "measured", r["command"])


def peer_rows(rows):
    """Ansible's playbook against the product, per size, operation and forks: the ratio of the
    medians (Ansible / product) for wall time and for CPU on the operator's side."""
    out = []
    by_case = {r["case"]: r for r in rows}
    for n in (1, 20):
        for ansible_op, product_op, label in (("up", "up", "converge"), ("check", "drift", "drift check")):
            product = by_case.get(f"product-{product_op}-n{n}")
            if not product:
                continue
            p_ms = runs_summary(product)[0]
            p_cpu = median([c["operator_ms"] for c in product.get("cpu") or [] if c])
            p_hosts = median([c["hosts_ms"] for c in product.get("cpu") or [] if c])
            for forks in (5, 20):
                ansible = by_case.get(f"ansible-{ansible_op}-n{n}-f{forks}")
                if not ansible:
                    continue
                a_ms, a_text = runs_summary(ansible)
                a_cpu = median([c["operator_ms"] for c in ansible.get("cpu") or [] if c])
                a_hosts = median([c["hosts_ms"] for c in ansible.get("cpu") or [] if c])
                text = f"Ansible {a_text}; the product {runs_summary(product)[1]}"
                if a_ms and p_ms:
                    text += f"; **{a_ms / p_ms:.2f}×** the product's time"
                if a_cpu and p_cpu:
                    text += (
                        f"; CPU (medians): ansible-playbook {fmt_ms(a_cpu)}, pulumi {fmt_ms(p_cpu)}"
                        f" ({a_cpu / p_cpu:.2f}×)"
                    )
                if a_hosts and p_hosts:
                    text += (
                        f"; lab hosts' sessions: Ansible's {fmt_ms(a_hosts)}, the product's "
                        f"{fmt_ms(p_hosts)} ({a_hosts / p_hosts:.2f}×)"
                    )
                row = measured_row(
                    "7 Against the peer",
                    f"{label}, {n} node{'s' if n != 1 else ''}, Ansible forks {forks}",
                    text,
                    "the ratio, reported",
                    {"rc": (ansible.get("rc") or []) + (product.get("rc") or []), "command": ""},
                )
                out.append(row[:5] + (f"{ansible['command']}; {product['command']}",))
    return out


def largest_rows(rows):
    """Time, CPU and peak memory against the node count for up and the drift check, and each
    projected to 300 nodes by the least-squares line through the measured sizes."""
    out = []
    for op, label in (("up", "pulumi up from the as-found state"), ("drift", "the drift check")):
        by_n = {r["nodes"]: r for r in rows if r.get("op") == op}
        if not by_n:
            continue
        points = []
        for n in sorted(by_n):
            r = by_n[n]
            med, text = runs_summary(r)
            cpu = median([c["operator_ms"] for c in r.get("cpu") or [] if c])
            hosts = median([c["hosts_ms"] for c in r.get("cpu") or [] if c])
            rss = median(r.get("peak_rss_kb") or [])
            text += f"; CPU (medians): pulumi {fmt_ms(cpu)}, lab hosts {fmt_ms(hosts)}; peak memory of pulumi's processes {rss / 1024:.0f} MiB"
            out.append(measured_row("8 The largest estate", f"{label}, {n} nodes", text, "measured (no target)", r))
            points.append((n, med, cpu, rss))
        if len(points) >= 2:
            def fit(ys):
                xs = [p[0] for p in points]
                mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
                slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
                return slope, my - slope * mx
            parts = []
            for name, ys, fmt in (
                ("time", [p[1] for p in points], fmt_ms),
                ("pulumi CPU", [p[2] for p in points], fmt_ms),
                ("peak memory", [p[3] for p in points], lambda kb: f"{kb / 1024:.0f} MiB"),
            ):
                if any(y is None for y in ys):
                    continue
                slope, icept = fit(ys)
                parts.append(f"{name} {fmt(icept + slope * 300)} ({fmt(slope)} per node)" if name != "peak memory"
                             else f"{name} {fmt(icept + slope * 300)} ({slope:.0f} KB per node)")
            sizes = ", ".join(str(p[0]) for p in points)
            out.append(
                (
                    "8 The largest estate",
                    f"{label}, projected to 300 nodes",
                    f"least-squares line through {sizes} nodes: " + "; ".join(parts),
                    "measured (no target)",
                    "projection",
                    "bash bench/run largest",
                )
            )
    return out


def joingate_rows(rows):
    out = []
    for r in rows:
        target = "≤ poll + 1 s, poll ≤ 2 s"
        if r.get("measured") and r.get("tick_seconds") is not None:
            # From the leader's promotion: EtcdIsVoter follows on the leader's next tick, the
            # gate sees it on its next poll.
            lat = r.get("latency_ms") or []
            poll, tick = r.get("poll_seconds"), r.get("tick_seconds")
            bound_ms = (poll + tick) * 1000
            target = f"≤ poll ({poll} s) + one tick ({tick} s) + 3 s for the leader's pass and the gate's poll themselves"
            ok = bool(lat) and max(lat) <= bound_ms + 3000 and not r.get("failed")
            text = (
                f"leader's promotion → gate passed: median {fmt_ms(median(lat))}, max {fmt_ms(max(lat) if lat else None)} "
                f"over {len(lat)} joins ({', '.join(fmt_ms(x) for x in lat)}); poll + tick = {fmt_ms(bound_ms)}"
                + (f"; {r['failed']} join(s) FAILED" if r.get("failed") else "")
            )
            cond = [c for c in (r.get("condition_after_promotion_s") or []) if c is not None]
            if cond:
                text += (
                    f"; EtcdIsVoter=True came {median(cond)} s (median; {', '.join(str(c) for c in cond)}) after the "
                    "promotion, on the leader's next pass"
                )
            last = r.get("last_missing") or []
            slow = [last[i] for i, ms in enumerate(lat) if ms > bound_ms + 3000 and i < len(last)]
            if slow:
                counts = collections.Counter(slow)
                text += (
                    f"; the {len(slow)} join(s) over the target last waited for: "
                    + ", ".join(f"{what or '(nothing named)'} ({n})" for what, n in counts.most_common())
                )
            case = "leader's promotion → gate passes on the joining server"
        elif r.get("measured"):
            lat = r.get("latency_ms") or []
            poll = r.get("poll_seconds")
            ok = bool(lat) and max(lat) <= poll * 1000 + 1000 and poll <= 2 and not r.get("failed")
            text = (
                f"promotion → gate passed: median {fmt_ms(median(lat))}, max {fmt_ms(max(lat) if lat else None)} "
                f"over {len(lat)} joins ({', '.join(fmt_ms(x) for x in lat)}); poll interval {poll} s"
                + (f"; {r['failed']} join(s) FAILED" if r.get("failed") else "")
            )
            polls = r.get("first_poll_ms") or []
            if polls:
                text += (
                    f"; one poll while the member is a learner takes {fmt_ms(median(polls))} "
                    f"(median of its first polls), then it sleeps {poll} s"
                )
            case = "learner promoted → gate passes"
        else:
            ok, text = None, f"not measured: {r.get('reason')}"
            case = "leader's promotion → gate passes on the joining server"
        out.append(("5 Join-gate latency", case, text, target, verdict(ok), r["command"]))
    return out


# --- history ------------------------------------------------------------------------------------

FLOOR_MODES = {
    "ts": (
        "TypeScript (typescript: true, as the product runs)",
        "the converge stack's resources: a do-nothing dynamic resource per node under one component, "
        "and the three servers' ports preflights from 3 nodes on",
    ),
    "js": ("plain JavaScript", "the converge stack's resources, as for TypeScript"),
    "ts-per-node": (
        "TypeScript",
        "the layout before NodePreparations: a component per node around its do-nothing dynamic resource",
    ),
}
FLOOR_OPS = {"up": "pulumi up from an empty state", "drift": "pulumi preview --refresh --expect-no-changes"}


def per_added_node(by_n, key):
    """CPU (or wall) per added node between the smallest and the largest size, from medians."""
    lo, hi = min(by_n), max(by_n)
    a, b = median(by_n[lo].get(key) or []), median(by_n[hi].get(key) or [])
    if a is None or b is None or hi == lo:
        return None
    return (b - a) / (hi - lo)


def floor_rows(rows):
    out = []
    for mode, (mode_label, shape) in FLOOR_MODES.items():
        for op, op_label in FLOOR_OPS.items():
            by_n = {r["nodes"]: r for r in rows if r.get("mode") == mode and r.get("op") == op}
            if not by_n:
                continue
            base = runs_summary(by_n[min(by_n)])[0]
            for n in sorted(by_n):
                r = by_n[n]
                med, text = runs_summary(r)
                cpu = median(r.get("cpu_ms") or [])
                if cpu is not None:
                    text += f"; CPU (median) {fmt_ms(cpu)}"
                if n != min(by_n):
                    if med is not None and base:
                        text += f"; **{med / base:.2f}×** the {min(by_n)}-node time"
                    cpu_per = per_added_node(by_n, "cpu_ms")
                    if cpu_per is not None:
                        text += f"; {cpu_per:.1f} ms CPU per added node"
                out.append(
                    measured_row(
                        "4b Pulumi's floor",
                        f"{op_label}, {mode_label}, {n} node{'s' if n != 1 else ''} ({shape})",
                        text,
                        "measured (no target): what the product cannot go below with this many resources",
                        r,
                    )
                )
    return out


FLOOR_TARGET = 1.2


# Row 4c's slope: from 5 to 20 nodes every added node is a worker, which adds its preparation
# step and nothing else, in the product and in the floor alike; from 1 node, the slope also
# carries what the stack's shape adds once it has three servers (their ports preflights, the
# modules those load), which is not a cost per node.
RATIO_SIZES = (5, 20)


def paired_slopes(by_n, values_of):
    """Per repeat, (value at the larger size - value at the smaller) / the added nodes: repeat i
    of both sizes ran one after the other, so a slow drift of the machine's speed cancels."""
    lo, hi = min(by_n), max(by_n)
    a, b = values_of(by_n[lo]), values_of(by_n[hi])
    return [(y - x) / (hi - lo) for x, y in zip(a, b)]


def quartiles(values):
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


# Resamples of the repeats for the ratio's interval; a fixed seed, so a results file is
# reproducible from its measurements.
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 42


def ratio_interval(product, floor):
    """The central 90 % of the ratio of medians over resampled repeats (percentile bootstrap)."""
    rng = random.Random(BOOTSTRAP_SEED)
    ratios = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        p = median(rng.choices(product, k=len(product)))
        f = median(rng.choices(floor, k=len(floor)))
        if f > 0:
            ratios.append(p / f)
    ratios.sort()
    if len(ratios) < BOOTSTRAP_RESAMPLES // 2:
        return None
    return ratios[int(0.05 * len(ratios))], ratios[int(0.95 * len(ratios)) - 1]


def floor_ratio_rows(by_section):
    """The product's pulumi CPU per added node against the floor's, both measured in this run:
    the median of the per-repeat slopes of each, their ratio, and that ratio's 90 % interval. The
    verdict is met or missed only when the whole interval is on one side of the target."""
    out = []
    for section, op, label in (("converge", "up", "pulumi up"), ("drift", "drift", "the drift check")):
        product = {
            r["nodes"]: r
            for r in by_section[section]
            if not r.get("measured_on") and r["nodes"] in RATIO_SIZES
        }
        floor = {
            r["nodes"]: r
            for r in by_section["floor"]
            if r.get("mode") == "ts"
            and r.get("op") == op
            and not r.get("measured_on")
            and r["nodes"] in RATIO_SIZES
        }
        if len(product) < 2 or len(floor) < 2:
            continue
        lo, hi = min(product), max(product)
        product_slopes = paired_slopes(product, lambda r: [c["operator_ms"] for c in r.get("cpu") or []])
        floor_slopes = paired_slopes(floor, lambda r: r.get("cpu_ms") or [])
        if len(product_slopes) < 2 or len(floor_slopes) < 2:
            continue
        product_per, floor_per = median(product_slopes), median(floor_slopes)
        if floor_per <= 0:
            continue
        ratio = product_per / floor_per
        (pq1, pq3), (fq1, fq3) = quartiles(product_slopes), quartiles(floor_slopes)
        interval = ratio_interval(product_slopes, floor_slopes)
        text = (
            f"the product {product_per:.1f} ms of pulumi CPU per added node ({lo}→{hi} nodes; "
            f"quartiles of its {len(product_slopes)} repeats {pq1:.1f}–{pq3:.1f}), "
            f"the floor {floor_per:.1f} ms ({min(floor)}→{max(floor)} nodes; "
            f"{fq1:.1f}–{fq3:.1f}): **{ratio:.2f}×**"
        )
        if interval is None:
            ok = None
        else:
            text += f", 90 % interval {interval[0]:.2f}–{interval[1]:.2f}×"
            ok = True if interval[1] <= FLOOR_TARGET else False if interval[0] > FLOOR_TARGET else None
        state = verdict(ok) if ok is not None else "not settled: the interval spans the target"
        out.append(
            (
                "4c The product against the floor",
                f"{label}: pulumi CPU per added node, as a ratio to Pulumi's floor (TypeScript) in the same run",
                text,
                f"≤ {FLOOR_TARGET}× the floor",
                state,
                "BENCH_REPEATS=10 BENCH_FLOOR_MODES=ts bash bench/run converge floor",
            )
        )
    return out


# Per run, the figures that grow with the estate, so a regression shows against earlier runs.
HISTORY_KEEP = 10
REGRESSION = 1.2


def figures(rows):
    """{figure name: value} of the rows this run measured (carried rows are earlier runs')."""
    out = {}
    for r in rows:
        if r.get("measured_on"):
            continue
        wall = median(r.get("wall_ms") or [])
        label = f"{r['section']} {r['case']}"
        if wall is not None and r["section"] in ("converge", "drift", "scale", "floor"):
            out[f"{label}: wall ms"] = wall
        cpu = [c for c in (r.get("cpu") or []) if c]
        if cpu:
            out[f"{label}: pulumi CPU ms"] = median([c["operator_ms"] for c in cpu])
            out[f"{label}: hosts CPU ms"] = median([c["hosts_ms"] for c in cpu])
        if r.get("cpu_ms"):
            out[f"{label}: CPU ms"] = median(r["cpu_ms"])
        if r.get("state_bytes"):
            out[f"{label}: state bytes per node"] = round(median(r["state_bytes"]) / r["nodes"])
    return out


def update_history(path, meta, rows):
    """Appends this run's figures to the history file; returns the last HISTORY_KEEP runs."""
    runs = []
    if os.path.exists(path):
        with open(path, encoding="utf8") as f:
            runs = [json.loads(line) for line in f if line.strip()]
    now = figures(rows)
    if now:
        runs.append({"date": meta.get("date"), "source": meta.get("source"), "figures": now})
        with open(path, "w", encoding="utf8") as f:
            for run in runs:
                f.write(json.dumps(run, sort_keys=True) + "\n")
    return runs[-HISTORY_KEEP:]


def history_lines(runs):
    """A table per figure across runs; a value 20 % above the run before it is a regression."""
    if len(runs) < 1:
        return ["- no earlier run recorded"]
    names = sorted({k for run in runs for k in run["figures"]})
    lines = ["| figure | " + " | ".join(str(run["date"]) for run in runs) + " |"]
    lines.append("|---|" + "---|" * len(runs))
    regressions = []
    for name in names:
        cells, before = [], None
        for run in runs:
            value = run["figures"].get(name)
            if value is None:
                cells.append("-")
                continue
            text = f"{value:.0f}"
            if before is not None and before > 0 and value > before * REGRESSION:
                text = f"**{text}** (+{(value / before - 1) * 100:.0f} %)"
                if run is runs[-1]:
                    regressions.append(f"{name}: {before:.0f} -> {value:.0f}")
            cells.append(text)
            before = value
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Regressions in this run (over 20 % above the run before): " + ("; ".join(regressions) or "none") + "."]
    return lines


def cmd_history_add(args):
    """Adds an earlier results.json's figures to the history file, one run per date measured."""
    results = load(args.results)
    meta = results.get("meta", {})
    runs = collections.defaultdict(list)
    for r in results.get("measurements", []):
        when = r.get("measured_on") or f"{meta.get('date')} ({meta.get('source')})"
        runs[when].append({k: v for k, v in r.items() if k != "measured_on"})
    for when in sorted(runs):
        date, _, source = when.partition(" ")
        update_history(args.history, {"date": date, "source": source.strip("()")}, runs[when])


def cmd_report(args):
    rows = []
    with open(args.measurements, encoding="utf8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    meta = load(args.meta)
    rows, carried = carry_previous(rows, meta, args.previous)
    by_section = collections.defaultdict(list)
    for r in rows:
        by_section[r["section"]].append(r)

    baseline = next(
        (r.get("cluster_answer") for r in by_section["dns"] if r["case"] == "unfixed"), "10.43.0.1"
    )
    table = []
    table += dns_rows(by_section["dns"], baseline)
    table += dns_api_rows(by_section["dns-api"])
    table += hcc_drift_rows(by_section["hcc-drift"])
    table += scaling_rows(
        [r for r in by_section["converge"]],
        "2 Convergence scaling",
        "pulumi up from the as-found state",
        "20 nodes ≤ 2× 1 node",
    )
    table += scaling_rows(
        [r for r in by_section["drift"]],
        "3 Drift-check scaling",
        "pulumi preview --refresh --expect-no-changes",
        "20 nodes ≤ 2× 1 node",
    )
    table += scale_rows(by_section["scale"])
    table += floor_rows(by_section["floor"])
    table += floor_ratio_rows(by_section)
    table += joingate_rows(by_section["joingate"])
    table += peer_rows(by_section["peer"])
    table += largest_rows(by_section["largest"])

    missed = [t for t in table if "**" in t[4]]
    notes = list(carried)
    for section, label in (("converge", "pulumi up"), ("drift", "the drift check")):
        by_n = {r["nodes"]: r for r in by_section[section]}
        if len(by_n) < 2:
            continue
        lo, hi = by_n[min(by_n)], by_n[max(by_n)]
        lo_ms, hi_ms = runs_summary(lo)[0], runs_summary(hi)[0]
        lo_cpu, hi_cpu = lo.get("cpu") or [], hi.get("cpu") or []
        if not (lo_ms and hi_ms and lo_cpu and hi_cpu) or hi_ms / lo_ms <= 2:
            continue
        hosts = median([c["hosts_ms"] for c in hi_cpu]) - median([c["hosts_ms"] for c in lo_cpu])
        op = median([c["operator_ms"] for c in hi_cpu]) - median([c["operator_ms"] for c in lo_cpu])
        notes.append(
            f"Why {label} on {max(by_n)} nodes takes {hi_ms / lo_ms:.2f}× the {min(by_n)}-node time: "
            f"the {min(by_n)}-node run is mostly fixed cost ({fmt_ms(lo_ms)}: CLI, program, plugins); "
            f"the extra nodes add {fmt_ms(hosts)} of CPU on the lab hosts (sshd, bash, iptables-save) "
            f"and {fmt_ms(op)} in pulumi, and all lab hosts share this machine's cores with pulumi, "
            "where on the estate each host's part runs on that host."
        )
    scale = {r["case"]: r for r in by_section["scale"]}
    if "npm-verify-300" in scale and "verify-300" in scale:
        npm_ms = runs_summary(scale["npm-verify-300"])[0]
        step_ms = runs_summary(scale["verify-300"])[0]
        if npm_ms and step_ms and npm_ms >= 10000:
            notes.append(
                f"npm run verify on 300 nodes takes {fmt_ms(npm_ms)}, of which its verify step is "
                f"{fmt_ms(step_ms)}; the rest is the build npm runs first (preverify: "
                "scripts/build-cli.mjs), which does not depend on the stack's size."
            )
    with open(args.json_out, "w", encoding="utf8") as f:
        json.dump(
            {
                "meta": meta,
                "notes": notes,
                "table": [
                    dict(zip(["benchmark", "case", "result", "target", "verdict", "command"], t))
                    for t in table
                ],
                "measurements": rows,
            },
            f,
            indent=2,
        )
        f.write("\n")

    def cell(text):
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = [
        "# Benchmark results",
        "",
        f"Written by `npm run bench` (`bash bench/run`) on {meta['date']}; total {meta['total_s']} s.",
        f"Source measured: {meta['source']}. Machine: {meta['machine']}.",
        "1-minute load average before -> after each section (the machine is shared; other work "
        "running beside the bench shows here): " + ", ".join(meta.get("load", [])) + ".",
        "",
        "Every command below runs from the repository root with the bench lab's environment:",
        "",
        "```sh",
        f"export {meta['lab_env']}",
        "lab() { bash test/lab/lab \"$@\"; }   # the lab script, as `npm run lab --` runs it",
        "```",
        "",
    ]
    lines += [f"{note}" for note in carried] + ([""] if carried else [])
    lines += [
        "| benchmark | case | result | target | verdict | command |",
        "|---|---|---|---|---|---|",
    ]
    for t in table:
        lines.append("| " + " | ".join(cell(x) if i != 5 else f"`{cell(x)}`" for i, x in enumerate(t)) + " |")
    history = update_history(args.history, meta, rows) if args.history else []
    lines += ["", "## History", ""]
    lines += [f"Each run's figures, from `{os.path.basename(args.history or '')}` (the last {HISTORY_KEEP} runs)."] if history else []
    lines += [""] + history_lines(history)
    lines += ["", "## Method", ""]
    lines += [f"- {m}" for m in meta.get("method", [])]
    lines += ["", "## Targets missed", ""]
    if missed:
        for t in missed:
            lines.append(f"- {t[0]}, {t[1]}: {t[2]}")
        lines += ["", "Measured reasons:", ""]
        lines += [f"- {note}" for note in notes[len(carried):]]
    else:
        lines.append("- none")
    with open(args.md_out, "w", encoding="utf8") as f:
        f.write("\n".join(lines) + "\n")
    for t in table:
        print(f"{t[0]} | {t[1]} | {t[2]} | {t[4]}")


# What a sample's own frame belongs to, by its script's path: the first pattern that matches.
PROFILE_PARTS = [
    ("TypeScript compiler (ts-node)", re.compile(r"/node_modules/(typescript|ts-node)/")),
    ("gRPC and protobuf", re.compile(r"/node_modules/(@grpc|google-protobuf|@protobufjs|protobufjs)/")),
    ("ssh2 (SSH client)", re.compile(r"/node_modules/(ssh2|cpu-features|asn1|bcrypt-pbkdf)/")),
    ("Pulumi SDK: closure serialization", re.compile(r"/@pulumi/pulumi/runtime/closure/")),
    ("Pulumi SDK", re.compile(r"/node_modules/@pulumi/")),
    ("other npm packages", re.compile(r"/node_modules/")),
    ("the project's code", re.compile(r"/(components|infra|policy)/")),
    ("Node.js internals", re.compile(r"^(node:|internal/)")),
]


def profile_part(url, name):
    if name in ("(garbage collector)", "(program)", "(idle)"):
        return name
    if name in ("wrapSafe", "compileFunction", "compileForInternalLoader"):
        return "compiling modules (V8)"
    for part, pattern in PROFILE_PARTS:
        if pattern.search(url or ""):
            return part
    return "(native or unattributed)" if not url else "other"


def read_profiles(directory):
    """Each process's self time by part and by function (microseconds), from its .cpuprofile."""
    procs = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".cpuprofile"):
            continue
        with open(os.path.join(directory, name)) as f:
            prof = json.load(f)
        nodes = {n["id"]: n for n in prof["nodes"]}
        # Self time of a node: the time deltas of the samples that landed on it.
        self_us = collections.Counter()
        for node_id, delta in zip(prof["samples"], prof["timeDeltas"]):
            self_us[node_id] += max(delta, 0)
        urls = {n["callFrame"].get("url", "") for n in prof["nodes"]}
        # The process's kind, by the runner whose code it loaded.
        kind = (
            "dynamic provider"
            if any("/@pulumi/pulumi/cmd/dynamic-provider/" in u for u in urls)
            else "program"
            if any("/@pulumi/pulumi/cmd/run/" in u for u in urls)
            else "node"
        )
        parts, funcs = collections.Counter(), collections.Counter()
        for node_id, us in self_us.items():
            frame = nodes[node_id]["callFrame"]
            url, fname = frame.get("url", ""), frame.get("functionName", "")
            part = profile_part(url, fname)
            if part == "(idle)":
                continue
            parts[part] += us
            short = re.sub(r"^.*/node_modules/", "", url) if "/node_modules/" in url else re.sub(r"^.*/(components|infra)/", r"\1/", url)
            funcs[f"{fname or '(anonymous)'} {short}:{frame.get('lineNumber', 0) + 1}"] += us
        procs.append({"file": name, "kind": kind, "parts": parts, "funcs": funcs})
    return procs


def cmd_cpu_profile(args):
    """Self time per part of each process; with --base, the difference per added node."""
    procs = read_profiles(args.dir)
    ms = lambda us: f"{us / 1000:.0f} ms"
    out = ["| process | busy CPU | share by part |", "|---|---|---|"]
    for p in procs:
        busy = sum(p["parts"].values())
        share = "; ".join(f"{k} {ms(v)} ({100 * v / busy:.0f} %)" for k, v in p["parts"].most_common(6))
        out.append(f"| {p['kind']} ({p['file']}) | {ms(busy)} | {share} |")
    if args.base:
        base = read_profiles(args.base)
        total = lambda ps, key: sum((q[key] for q in ps), collections.Counter())
        now_parts, base_parts = total(procs, "parts"), total(base, "parts")
        out += ["", f"All Node.js processes together, {args.base_nodes} node(s) against {args.nodes}, and the difference per added node:", ""]
        out += [f"| part | {args.base_nodes} node(s) | {args.nodes} nodes | per added node |", "|---|---|---|---|"]
        added = args.nodes - args.base_nodes
        for k in sorted(set(now_parts) | set(base_parts), key=lambda k: base_parts[k] - now_parts[k]):
            d = now_parts[k] - base_parts[k]
            out.append(f"| {k} | {ms(base_parts[k])} | {ms(now_parts[k])} | {d / added / 1000:.1f} ms |")
        b, n = sum(base_parts.values()), sum(now_parts.values())
        out.append(f"| all | {ms(b)} | {ms(n)} | {(n - b) / added / 1000:.1f} ms |")
        now_funcs, base_funcs = total(procs, "funcs"), total(base, "funcs")
        grown = collections.Counter({k: now_funcs[k] - base_funcs[k] for k in now_funcs})
        out += ["", f"Functions whose self time grew most from {args.base_nodes} to {args.nodes} nodes (per added node):", ""]
        for k, d in grown.most_common(args.top):
            out.append(f"- {d / added / 1000:.1f} ms {k}")
    else:
        for p in procs:
            out += ["", f"Top functions by self time, {p['kind']} ({p['file']}):", ""]
            out += [f"- {ms(v)} {k}" for k, v in p["funcs"].most_common(args.top)]
    print("\n".join(out))

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("dns")
    p.add_argument("--name", required=True)
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--expect", default="")
    p.set_defaults(func=cmd_dns)
    p = sub.add_parser("ssh-count")
    p.add_argument("--logs", required=True)
    p.set_defaults(func=cmd_ssh_count)
    p = sub.add_parser("ssh-ops")
    p.set_defaults(func=cmd_ssh_ops)
    p = sub.add_parser("ssh-summary")
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--ops", required=True)
    p.set_defaults(func=cmd_ssh_summary)
    p = sub.add_parser("cpu-hosts")
    p.add_argument("--lab-dir", required=True)
    p.set_defaults(func=cmd_cpu_hosts)
    p = sub.add_parser("cpu-profile")
    p.add_argument("--dir", required=True)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--base", help="profiles of the same command on fewer nodes")
    p.add_argument("--base-nodes", type=int, default=1)
    p.add_argument("--nodes", type=int, default=20)
    p.set_defaults(func=cmd_cpu_profile)
    p = sub.add_parser("peak-rss")
    p.add_argument("--log", required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_peak_rss)
    p = sub.add_parser("record")
    p.add_argument("--out", required=True)
    p.add_argument("--section", required=True)
    p.add_argument("--case", required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--kv", action="append", help="key=value (value parsed as JSON when it is JSON)")
    p.add_argument("--json", action="append", help="key=path of a JSON file")
    p.set_defaults(func=cmd_record)
    p = sub.add_parser("history-add")
    p.add_argument("--results", required=True)
    p.add_argument("--history", required=True)
    p.set_defaults(func=cmd_history_add)
    p = sub.add_parser("report")
    p.add_argument("--measurements", required=True)
    p.add_argument("--meta", required=True)
    p.add_argument("--json-out", required=True)
    p.add_argument("--md-out", required=True)
    p.add_argument("--previous", help="results.json of an earlier run: sections not measured now are kept from it")
    p.add_argument("--history", help="JSON lines of earlier runs' figures; this run's are appended")
    p.set_defaults(func=cmd_report)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()

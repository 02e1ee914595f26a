/** doctor's report as people read it. */
import type { DoctorReport } from "./diagnose";

/** The report as people read it: each cause with its host, evidence and remedy. */
export function reportText(report: DoctorReport): string {
  const lines = [
    `doctor: stack ${report.stack}, ${report.hosts} host(s) read in ${(report.wallMs / 1000).toFixed(1)} s`,
  ];
  if (report.findings.length === 0) lines.push("no cause found");
  const width = Math.max(4, ...report.findings.map((f) => f.host.length));
  for (const f of report.findings) {
    lines.push("");
    lines.push(`${f.host.padEnd(width)}  ${f.cause}: ${f.summary}`);
    lines.push(`${"".padEnd(width)}  evidence: ${f.evidence}`);
    lines.push(`${"".padEnd(width)}  remedy:   ${f.remedy}`);
  }
  if (report.unchecked.length > 0) {
    lines.push("", "not checked (no cause is claimed):");
    for (const u of report.unchecked) lines.push(`  ${u.host}  ${u.check}: ${u.reason}`);
  }
  if (report.findings.length > 0) {
    const hosts = new Set(report.findings.map((f) => f.host)).size;
    lines.push("", `${report.findings.length} cause(s) on ${hosts} host(s)`);
  }
  return lines.join("\n");
}

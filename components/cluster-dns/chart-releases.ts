/**
 * Which rke2-coredns chart each RKE2 release ships, and so which values keys that release's
 * cluster DNS honours. What `render` shows for a cluster, what validation accepts and what the
 * policies judge all follow the chart of the cluster's own release.
 */
import { chartReadsKey } from "./known-values";

/**
 * RKE2 release -> rke2-coredns chart version: the `version` of the `/charts/rke2-coredns.yaml`
 * entry in rancher/rke2@<release>:charts/chart_versions.yaml, one row per release tag (release
 * candidates left out) of the minor lines v1.33 to v1.36, the lines that got a release with
 * chart 1.46.201 (v1.32's last release, v1.32.13+rke2r2, ships 1.45.205). A release that is not
 * here is refused by validation: add its row from that file at its tag.
 */
const RKE2_COREDNS_CHARTS: readonly (readonly [release: string, chart: string])[] = [
  ["v1.33.0+rke2r1", "1.39.201"],
  ["v1.33.1+rke2r1", "1.42.000"],
  ["v1.33.2+rke2r1", "1.42.302"],
  ["v1.33.3+rke2r1", "1.42.302"],
  ["v1.33.4+rke2r1", "1.43.101"],
  ["v1.33.5+rke2r1", "1.43.302"],
  ["v1.33.6+rke2r1", "1.44.300"],
  ["v1.33.7+rke2r1", "1.45.003"],
  ["v1.33.7+rke2r2", "1.45.008"],
  ["v1.33.7+rke2r3", "1.45.008"],
  ["v1.33.8+rke2r1", "1.45.201"],
  ["v1.33.9+rke2r1", "1.45.201"],
  ["v1.33.10+rke2r1", "1.45.205"],
  ["v1.33.10+rke2r2", "1.45.205"],
  ["v1.33.10+rke2r3", "1.45.205"],
  ["v1.33.11+rke2r1", "1.45.209"],
  ["v1.33.12+rke2r1", "1.45.212"],
  ["v1.33.12+rke2r2", "1.45.212"],
  ["v1.33.13+rke2r1", "1.46.002"],
  ["v1.33.13+rke2r2", "1.46.201"],
  ["v1.34.1+rke2r1", "1.43.302"],
  ["v1.34.2+rke2r1", "1.44.300"],
  ["v1.34.3+rke2r1", "1.45.003"],
  ["v1.34.3+rke2r2", "1.45.008"],
  ["v1.34.3+rke2r3", "1.45.008"],
  ["v1.34.4+rke2r1", "1.45.201"],
  ["v1.34.5+rke2r1", "1.45.201"],
  ["v1.34.6+rke2r1", "1.45.205"],
  ["v1.34.6+rke2r2", "1.45.205"],
  ["v1.34.6+rke2r3", "1.45.205"],
  ["v1.34.7+rke2r1", "1.45.209"],
  ["v1.34.8+rke2r1", "1.45.212"],
  ["v1.34.8+rke2r2", "1.45.212"],
  ["v1.34.9+rke2r1", "1.46.002"],
  ["v1.34.10+rke2r1", "1.46.201"],
  ["v1.35.0+rke2r1", "1.45.003"],
  ["v1.35.0+rke2r2", "1.45.008"],
  ["v1.35.0+rke2r3", "1.45.008"],
  ["v1.35.1+rke2r1", "1.45.201"],
  ["v1.35.2+rke2r1", "1.45.201"],
  ["v1.35.3+rke2r1", "1.45.205"],
  ["v1.35.3+rke2r2", "1.45.205"],
  ["v1.35.3+rke2r3", "1.45.205"],
  ["v1.35.4+rke2r1", "1.45.209"],
  ["v1.35.5+rke2r1", "1.45.212"],
  ["v1.35.5+rke2r2", "1.45.212"],
  ["v1.35.6+rke2r1", "1.46.002"],
  ["v1.35.7+rke2r1", "1.46.201"],
  ["v1.36.0+rke2r1", "1.45.212"],
  ["v1.36.1+rke2r1", "1.45.212"],
  ["v1.36.1+rke2r2", "1.45.212"],
  ["v1.36.2+rke2r1", "1.46.002"],
  ["v1.36.3+rke2r1", "1.46.201"],
];

/** Where the table lives, for messages that ask to extend it. */
export const RELEASE_TABLE_MODULE = "components/cluster-dns/chart-releases.ts";

const CHART_OF = new Map(RKE2_COREDNS_CHARTS);

/** The rke2-coredns chart version the release ships, or undefined when it is not in the table. */
export function corednsChartOf(release: string): string | undefined {
  return CHART_OF.get(release);
}

/** Every release in the table, oldest first. */
export function knownReleases(): string[] {
  return [...CHART_OF.keys()].sort(compareReleases);
}

const RELEASE = /^v(\d+)\.(\d+)\.(\d+)\+rke2r(\d+)$/;

/** "v1.35" for "v1.35.7+rke2r1"; undefined for text that is not an RKE2 release. */
export function minorLineOf(release: string): string | undefined {
  const m = RELEASE.exec(release);
  return m ? `v${m[1]}.${m[2]}` : undefined;
}

/** Orders RKE2 releases: minor, patch, then the rke2r revision. */
export function compareReleases(a: string, b: string): number {
  const pa = RELEASE.exec(a)?.slice(1).map(Number) ?? [];
  const pb = RELEASE.exec(b)?.slice(1).map(Number) ?? [];
  for (let i = 0; i < 4; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** The minor lines the table covers, e.g. ["v1.33", ..., "v1.36"]. */
export function knownMinorLines(): string[] {
  return [...new Set(knownReleases().map((r) => minorLineOf(r)!))];
}

/** The newest release of a minor line in the table. */
export function newestReleaseOn(line: string): string | undefined {
  return knownReleases()
    .filter((r) => minorLineOf(r) === line)
    .pop();
}

/** Whether the chart the release ships reads `key`; false for a release not in the table. */
export function releaseHonours(release: string, key: string): boolean {
  const chart = corednsChartOf(release);
  return chart !== undefined && chartReadsKey(chart, key);
}

/** The first release on the minor line whose chart reads `key`, when one exists. */
export function firstReleaseHonouring(line: string, key: string): string | undefined {
  return knownReleases().find((r) => minorLineOf(r) === line && releaseHonours(r, key));
}

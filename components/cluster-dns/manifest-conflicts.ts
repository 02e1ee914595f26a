/**
 * The check in front of the server-manifest delivery of the DNS fix: no other file in a server's
 * manifests directory defines the HelmChartConfig kube-system/rke2-coredns.
 *
 * RKE2 applies every file of that directory, subdirectories included, as an AddOn of its own, at
 * each start and whenever a file changes (k3s-io/k3s@0301210fa15f:pkg/deploy/controller.go,
 * listFilesIn and deploy: on start every file in path order, then each changed one), on every
 * server that holds it (rancher/rke2-docs@9477b7b1:docs/install/packaged_components.md: RKE2 does
 * not sync AddOn content between servers). An operator's own `rke2-coredns-config.yaml` beside
 * the fix's file therefore overwrites it, or is overwritten, depending on which server restarted
 * last: the fix (or their tuned values) comes and goes. Removing a file or adding a `.skip` for it
 * leaves what it applied in place (the same page), so the only safe moment to choose is before
 * the fix's file is written. The check runs on every server of the cluster, read-only, and the
 * fix is written only when it holds (manifest-check-provider.ts); a file the operator skipped
 * (`<name>.skip`) is not applied and does not count. Pure: no Pulumi, no I/O.
 */
import * as YAML from "yaml";

type KubeObject = {
  kind?: unknown;
  metadata?: { name?: unknown; namespace?: unknown };
  items?: unknown;
};

/** The objects of one YAML (or JSON) document, a `List`'s items spread as the deploy controller does. */
function objectsOf(value: unknown): KubeObject[] {
  if (typeof value !== "object" || value === null) return [];
  const object = value as KubeObject;
  if (
    Array.isArray(object.items) &&
    typeof object.kind === "string" &&
    object.kind.endsWith("List")
  )
    return object.items.flatMap(objectsOf);
  return [object];
}

/**
 * Why one file RKE2 applies conflicts with the fix: it defines HelmChartConfig `rke2-coredns` in
 * kube-system (or with no namespace, which the apply may place there), or it cannot be parsed,
 * so what it defines cannot be told. Undefined when it does neither.
 */
export function conflictIn(text: string): string | undefined {
  const documents = YAML.parseAllDocuments(text);
  const broken = documents.find((d) => d.errors.length > 0);
  if (broken) {
    return `cannot be parsed (${broken.errors[0].message.split("\n")[0]}), and it names HelmChartConfig and rke2-coredns`;
  }
  for (const object of documents.flatMap((d) => objectsOf(d.toJS()))) {
    const namespace = object.metadata?.namespace;
    if (
      object.kind === "HelmChartConfig" &&
      object.metadata?.name === "rke2-coredns" &&
      (namespace === undefined || namespace === "kube-system")
    ) {
      const where = namespace === undefined ? "with no namespace" : "in kube-system";
      return `defines HelmChartConfig rke2-coredns ${where}`;
    }
  }
  return undefined;
}

/** The conflicts manifest-facts.sh's report shows, as "<path> <why>". */
export function manifestConflicts(stdout: string): string[] {
  const conflicts: string[] = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("file ")) continue;
    const [path, b64] = line.slice("file ".length).split(" ");
    const why = conflictIn(Buffer.from(b64 ?? "", "base64").toString("utf8"));
    if (why !== undefined) conflicts.push(`${path} ${why}`);
  }
  return conflicts;
}

/** The error that stops the delivery: the server, each file, why it matters and both ways out. */
export function manifestConflictFailure(
  state: { readonly node: string },
  conflicts: readonly string[],
): string {
  return (
    `the DNS fix was not written: on server ${state.node}, RKE2 would also apply\n  - ` +
    conflicts.join("\n  - ") +
    "\nRKE2 applies each file of its manifests directory as an AddOn of its own, at every start and on " +
    "every change, so two files defining one object overwrite each other and whichever was applied " +
    "last wins; removing or skipping a file later leaves what it applied in place. Keep one: move the " +
    "file's values into the stack's dns settings and create `<file>.skip` beside it (RKE2 then ignores " +
    "it and nothing it applied is deleted), or set rke2.dnsDelivery: helmChartConfig, which keeps the " +
    "live object's own values beside the fix. Then run pulumi up again."
  );
}

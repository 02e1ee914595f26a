/** Resource type tokens the policies look at; the components define the same tokens. */
export const LIBVIRT_DNS_TYPE = "pulumi-nodejs:dynamic/libvirt:DnsHostRecords";
export const NODE_PREPARATION_TYPE = "pulumi-nodejs:dynamic/node:Preparation";
export const REMOTE_COMMAND_TYPE = "command:remote:Command";

/** Types whose resources open SSH sessions and therefore must pin the host key. */
export const SSH_RESOURCE_TYPES = [LIBVIRT_DNS_TYPE, NODE_PREPARATION_TYPE, REMOTE_COMMAND_TYPE];

export function objectProp(
  props: Record<string, unknown>,
  name: string,
): Record<string, unknown> | undefined {
  const value = props[name];
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)
    : undefined;
}

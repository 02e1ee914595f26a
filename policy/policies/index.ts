import { Policy } from "@pulumi/policy";

/** Every policy of the pack, in the order they are reported. */
export const allPolicies: Policy[] = [];

/** The CrossGuard pack: `pulumi preview --policy-pack policy`. Policies live in ./policies. */
import { PolicyPack } from "@pulumi/policy";
import { allPolicies } from "./policies";

new PolicyPack("rke2-remediation", { policies: allPolicies });

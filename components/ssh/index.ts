export { fingerprintOfKeyLine, fingerprintOfBlob, blobOfKeyLine } from "./host-key";
export {
  failureReason,
  pinnedTarget,
  runScript,
  scriptWithParams,
  shellQuote,
  sshError,
} from "./run-script";
export type { PinnedTarget, SshConnection, ScriptResult, RunScriptOptions } from "./run-script";

export {
  fingerprintOfKeyLine,
  fingerprintOfBlob,
  blobOfKeyLine,
  hostKeyAlgorithms,
} from "./host-key";
export {
  HOST_LOCK_DIR,
  hostStepBounds,
  hostStepCommand,
  hostStepOutcome,
  lockFileName,
} from "./host-step";
export type { HostStepBounds, HostStepOutcome } from "./host-step";
export {
  failureReason,
  pinnedTarget,
  runHostScript,
  runScript,
  scriptWithParams,
  shellQuote,
  sshError,
} from "./run-script";
export type {
  HostScriptOptions,
  PinnedTarget,
  SshConnection,
  ScriptResult,
  RunScriptOptions,
} from "./run-script";

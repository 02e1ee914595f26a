export { fingerprintOfKeyLine, fingerprintOfBlob, blobOfKeyLine } from "./host-key";
export { failureReason, runScript, scriptWithParams, shellQuote, sshError } from "./run-script";
export type { SshConnection, ScriptResult, RunScriptOptions } from "./run-script";

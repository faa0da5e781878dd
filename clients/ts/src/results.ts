// Result roots with a meaning of their own.
import { toHex } from "@cosmjs/encoding";

/**
 * FAILED_ROOT_HEX is the result root a verification task (an audit, a tie's escalation, a
 * committee member) reveals when its run of the job failed on the job's side: the chain
 * compares it with the result it verifies like any root (x/market/README.md, "Failure is
 * a result"). It is sha256("flops/market/failed-run"), the chain's types.FailedRoot; a
 * primary reports its failure with MsgReportFailure instead.
 */
export const FAILED_ROOT_HEX = "06361b09cbfb999fee83e49e817d28ed53829a5d69c178a8eb25e60573522e18";

/** isFailedRoot: root is the failed-run root. */
export function isFailedRoot(root: Uint8Array): boolean {
  return toHex(root) === FAILED_ROOT_HEX;
}

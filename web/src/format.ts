// Display helpers. Amounts stay integers (bigint) until they are printed.
import { marketTypes, gflTypes, stakingslashTypes } from "@flopsnet/client";

/** sixDecimals prints an integer count of millionths as a decimal with up to 6 places,
 * thousands separated: 20400000 -> "20.4". */
function sixDecimals(millionths: string | bigint | number): string {
  const v = BigInt(millionths);
  const neg = v < 0n;
  const a = neg ? -v : v;
  const frac = (a % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${neg ? "-" : ""}${(a / 1_000_000n).toLocaleString("en-US")}${frac ? "." + frac : ""}`;
}

/** dps prints an amount of udps as DPS: 20400000 -> "20.4 DPS". */
export function dps(udps: string | bigint | undefined): string {
  if (udps === undefined || udps === "") return "—";
  return `${sixDecimals(udps)} DPS`;
}

/** gfl prints GFLOP/s as GFL, exactly (1 GFL = 1 PFLOP/s = 10^6 GFLOP/s; 1 ugfl = 1 GFLOP/s). */
export function gfl(gflops: bigint | number | string): string {
  return `${sixDecimals(gflops)} GFL`;
}

/** gflops prints GFLOP/s with a unit that fits. */
export function gflops(v: bigint | number | string): string {
  const n = Number(v);
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} PFLOP/s`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(2)} TFLOP/s`;
  return `${n} GFLOP/s`;
}

const strip = (s: string, prefix: string) => (s.startsWith(prefix) ? s.slice(prefix.length) : s);

export const taskStatus = (s: marketTypes.TaskStatus) => strip(marketTypes.taskStatusToJSON(s), "TASK_STATUS_");
export const disputeStatus = (s: marketTypes.DisputeStatus) => strip(marketTypes.disputeStatusToJSON(s), "DISPUTE_STATUS_");
export const jobStatus = (s: marketTypes.JobStatus) => strip(marketTypes.jobStatusToJSON(s), "JOB_STATUS_");
export const nodeStatus = (s: gflTypes.NodeStatus) => strip(gflTypes.nodeStatusToJSON(s), "NODE_STATUS_");
export const workload = (s: gflTypes.WorkloadClass) => strip(gflTypes.workloadClassToJSON(s), "WORKLOAD_CLASS_");
export const slashReason = (s: stakingslashTypes.SlashReason) => strip(stakingslashTypes.slashReasonToJSON(s), "SLASH_REASON_");
export const failureReason = (s: marketTypes.FailureReason) => strip(marketTypes.failureReasonToJSON(s), "FAILURE_REASON_");

const failureOutcomes: Partial<Record<marketTypes.FailureStatus, string>> = {
  [marketTypes.FailureStatus.FAILURE_STATUS_PENDING]: "pending: the task runs again on another operator's node to decide it",
  [marketTypes.FailureStatus.FAILURE_STATUS_CONFIRMED]: "confirmed by another operator's run: both paid the confirmed time",
  [marketTypes.FailureStatus.FAILURE_STATUS_REFUTED]: "refuted: another node produced a verified result; the reporter was slashed",
  [marketTypes.FailureStatus.FAILURE_STATUS_UNCONFIRMED]: "unconfirmed: the rerun decided nothing (it lapsed, was wrong, or is a NONE job's unverified result); the reporter was slashed as for an abandoned task",
  [marketTypes.FailureStatus.FAILURE_STATUS_CANCELLED]: "cancelled with the job: the reporter was paid its time",
  [marketTypes.FailureStatus.FAILURE_STATUS_UNDECIDED]: "undecided: no other operator's node could take the task; nobody paid or slashed",
};

/** failureOutcome says what became of a provider's failure report, as the owner reads it. */
export function failureOutcome(s: marketTypes.FailureStatus): string {
  return failureOutcomes[s] ?? strip(marketTypes.failureStatusToJSON(s), "FAILURE_STATUS_");
}

/** decNumber reads a cosmos.Dec: the wire form is an integer scaled by 10^18
 * ("999999999656402560" is 0.999999999656402560); a string with a point is read as is. */
export function decNumber(s: string | undefined): number {
  if (!s) return NaN;
  if (s.includes(".")) return Number(s);
  const v = BigInt(s);
  return Number(v / 10n ** 12n) / 1e6;
}

/** dec prints a cosmos.Dec with `places` decimals. */
export function dec(s: string | undefined, places = 3): string {
  const n = decNumber(s);
  return Number.isFinite(n) ? n.toFixed(places) : "—";
}

export function short(addr: string): string {
  return addr.length > 20 ? `${addr.slice(0, 10)}…${addr.slice(-6)}` : addr;
}

export function durationOf(d: { seconds: bigint; nanos: number } | undefined): string {
  if (!d) return "—";
  const s = Number(d.seconds);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${(s / 3600).toFixed(1)}h`;
}

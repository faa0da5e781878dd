// One job: its tasks live (status, provider, price, time used, progress through the
// lifecycle), its history, and the owner's cancel and challenge buttons.
import { html } from "lit";
import { appendLog, fetchOutputs, gflTypes, isFailedRoot, marketTx, marketTypes, readLog, revokeEverywhere, revokeOutputSessions, type Checked } from "@flopsnet/client";

import { toHex } from "@cosmjs/encoding";

import { disputeStatus, dps, failureOutcome, failureReason, jobStatus, short, taskStatus } from "../format.js";
import { page } from "../page.js";
import { send } from "../tx.js";
import { View } from "../view.js";
import { forgetOutputSessions, outputSession } from "../wallet.js";

/** LOG_KEPT bounds the characters of a followed log the page keeps (the newest). */
const LOG_KEPT = 2 << 20;
const STEPS = ["PENDING", "ASSIGNED", "RUNNING", "COMMITTED", "REVEALED", "VERIFIED", "SETTLED"];
const FINAL_JOB = new Set(["COMPLETED", "FAILED", "CANCELLED"]);

export class JobView extends View {
  static properties = {
    ...View.properties,
    jobId: { attribute: "job-id" },
    job: { state: true },
    tasks: { state: true },
    history: { state: true },
    panels: { state: true },
    disputes: { state: true },
  };
  declare jobId: string;
  declare job: marketTypes.Job | undefined;
  declare tasks: marketTypes.Task[];
  declare history: marketTypes.HistoryEntry[];
  declare panels: Record<string, Panel>;
  /** the disputes of the job's tasks (a challenge, an audit's disagreement), by id */
  declare disputes: Map<bigint, marketTypes.Dispute>;
  private endpoints = new Map<bigint, string>();
  private logTimers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor() {
    super();
    this.tasks = [];
    this.history = [];
    this.panels = {};
    this.disputes = new Map();
  }

  disconnectedCallback(): void {
    super.disconnectedCallback();
    for (const t of this.logTimers.values()) clearTimeout(t);
  }

  // Another job in the same element (a link from one job to another): start over.
  protected willUpdate(changed: Map<string, unknown>): void {
    if (changed.has("jobId") && changed.get("jobId") !== undefined) {
      for (const t of this.logTimers.values()) clearTimeout(t);
      this.logTimers.clear();
      this.job = undefined;
      this.tasks = [];
      this.history = [];
      this.panels = {};
      this.disputes = new Map();
      this.loading = true;
      void this.reload();
    }
  }

  protected async load(): Promise<void> {
    const id = BigInt(this.jobId);
    const [job, tasks, history] = await Promise.all([
      this.chain.q.market.Job({ jobId: id }),
      this.chain.q.market.TasksByJob({ jobId: id, pagination: page(500) }),
      this.chain.q.market.JobHistory({ jobId: id, pagination: page(500) }),
    ]);
    this.job = job.job;
    this.tasks = tasks.tasks;
    this.history = history.entries;
    const ids = [...new Set(this.tasks.filter((t) => t.disputeId > 0n).map((t) => t.disputeId))];
    const disputes = await Promise.all(ids.map((disputeId) => this.chain.q.market.Dispute({ disputeId })));
    this.disputes = new Map(disputes.flatMap((d) => (d.dispute ? [[d.dispute.id, d.dispute] as const] : [])));
    for (const t of this.tasks) {
      if (t.nodeId > 0n && !this.endpoints.has(t.nodeId)) {
        const n = await this.chain.q.gfl.Node({ nodeId: t.nodeId });
        if (n.node?.endpoint) this.endpoints.set(t.nodeId, n.node.endpoint);
      }
    }
  }

  private setPanel(id: bigint, p: Partial<Panel>) {
    const k = id.toString();
    this.panels = { ...this.panels, [k]: { ...(this.panels[k] ?? { log: "", offset: 0 }), ...p } };
  }

  /** outputs fetches the task's outputs from its provider and checks them against the chain. */
  private async outputs(t: marketTypes.Task) {
    this.setPanel(t.id, { busy: true, error: undefined, open: true });
    try {
      const spec = this.job?.spec;
      const gemm = spec?.runtime === gflTypes.Runtime.RUNTIME_BUILTIN && spec.image === "gemm";
      const checked = await fetchOutputs(t.outputUri, t.id, await outputSession(this.chain.wallet!, t.outputUri), toHex(t.resultRoot), gemm);
      this.setPanel(t.id, { checked, busy: false });
    } catch (e) {
      this.setPanel(t.id, { error: e instanceof Error ? e.message : String(e), busy: false });
    }
  }

  /** logs reads the task's stdout from where it left off, and again every 2 s while the
   * task runs on its provider. */
  private async logs(t: marketTypes.Task) {
    const k = t.id.toString();
    clearTimeout(this.logTimers.get(k));
    const endpoint = this.endpoints.get(t.nodeId);
    if (!endpoint) {
      this.setPanel(t.id, { open: true, error: "the node has no endpoint on chain" });
      return;
    }
    const p = this.panels[k] ?? { log: "", offset: 0 };
    try {
      const r = await readLog(endpoint, t.id, "stdout", p.offset, await outputSession(this.chain.wallet!, endpoint));
      // the page keeps the last LOG_KEPT characters: a task that writes without end would
      // otherwise fill the tab's memory as it is followed
      const log = appendLog(p.log, r.text, LOG_KEPT);
      this.setPanel(t.id, { open: true, log, offset: r.next, following: r.running, error: undefined });
      if (r.running && this.isConnected) this.logTimers.set(k, setTimeout(() => void this.logs(t), 2000));
    } catch (e) {
      this.setPanel(t.id, { open: true, error: e instanceof Error ? e.message : String(e), following: false });
    }
  }

  /** endSessions has the wallet sign, once, the end of every output session (session key)
   * it delegated before now, and takes it to each provider that may hold something of
   * this job's tasks: where their outputs were published, where they ran, where a run
   * failed. For a session key that may have leaked: the providers refuse it from then on. */
  private endSessions() {
    const wallet = this.chain.wallet!;
    return this.action(async () => {
      const held = new Map<string, bigint[]>();
      const add = (endpoint: string, task: bigint) => {
        const e = endpoint.replace(/\/+$/, "");
        if (!e) return;
        const tasks = held.get(e) ?? [];
        if (!tasks.includes(task)) tasks.push(task);
        held.set(e, tasks);
      };
      for (const t of this.tasks) {
        const i = t.outputUri.indexOf("/v1/tasks/");
        if (i > 0) add(t.outputUri.slice(0, i), t.id);
        for (const node of [t.nodeId, ...t.failures.map((f) => f.nodeId)]) {
          if (node === 0n) continue;
          let endpoint = this.endpoints.get(node);
          if (endpoint === undefined) {
            endpoint = (await this.chain.q.gfl.Node({ nodeId: node })).node?.endpoint ?? "";
            this.endpoints.set(node, endpoint);
          }
          add(endpoint, t.id);
        }
      }
      if (held.size === 0) throw new Error("No provider holds anything of this job's tasks yet: there is no session to end.");
      const rv = await revokeOutputSessions(wallet);
      forgetOutputSessions(wallet, rv.before);
      const results = await revokeEverywhere(rv, [...held].map(([endpoint, tasks]) => ({ endpoint, tasks })));
      const failed = results.filter((r) => r.error);
      const when = new Date(rv.before * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
      if (failed.length > 0) {
        throw new Error(
          `Sessions ended at ${results.length - failed.length} of ${results.length} providers; not at ${failed.map((f) => `${f.endpoint} (${f.error})`).join(", ")}.`,
        );
      }
      return `Sessions ended at ${results.length} provider(s): the session keys this wallet delegated before ${when} are refused there; the next read asks the wallet again.`;
    });
  }

  private verdict(c: Checked, failed: boolean) {
    if (!c.downloaded) {
      // the manifest is not the committed result: nothing was downloaded
      return html`<p data-testid="outputs-verdict" class="error">
        Not verified: the provider's manifest is not the result committed on chain (${c.refused}), so no file was downloaded.
      </p>`;
    }
    if (failed) {
      // a verification task's run that failed: its answer is the failed-run root, and what
      // it published is its logs and whatever the job wrote, checked against the manifest
      const ok = c.rootOk && [...c.files, ...c.logs].every((f) => f.ok);
      return html`<p data-testid="outputs-verdict" class=${ok ? "ok" : "error"}>
        This run of the job failed, and the task answered so (the failed-run root).
        ${ok ? `Its ${c.files.length} file(s) and logs match the manifest.` : "Its files or logs do not match the manifest."}
      </p>`;
    }
    const ok = c.rootOk && c.resultRootOk && c.boundOk && c.files.every((f) => f.ok);
    const problems = [
      !c.boundOk ? `${c.bound} is not the result root committed on chain` : "",
      !c.resultRootOk ? "the manifest's result root is not the chain's" : "",
      !c.rootOk ? "the manifest's root does not match its files" : "",
      c.files.some((f) => !f.ok) ? `${c.files.filter((f) => !f.ok).length} file(s) do not match the manifest` : "",
    ].filter(Boolean);
    return html`<p data-testid="outputs-verdict" class=${ok ? "ok" : "error"}>
      ${ok
        ? `Verified: ${c.files.length} file(s) match the manifest, and ${c.bound}, recomputed here, is the result root committed on chain (${c.manifest.result_root.slice(0, 12)}…).`
        : `Not verified: ${problems.join("; ")}.`}
    </p>`;
  }

  private panel(t: marketTypes.Task) {
    const p = this.panels[t.id.toString()];
    if (!p?.open) return "";
    const c = p.checked;
    return html`<tr class="panel"><td colspan="8">
      ${p.busy ? html`<p class="loading" role="status">Fetching the outputs from the provider…</p>` : ""}
      ${p.error ? html`<p class="error" role="alert">${p.error}</p>` : ""}
      ${c ? this.verdict(c, isFailedRoot(t.resultRoot)) : ""}
      ${c
        ? html`
            <ul class="files">
              ${[...c.files, ...c.logs].map(
                (f) => html`<li>${f.ok ? "✓" : "✗"} <code>${f.path}</code> ${f.size} bytes${f.problem ? html` <span class="error">${f.problem}</span>` : ""}</li>`,
              )}
            </ul>`
        : ""}
      ${p.log !== "" || p.following !== undefined
        ? html`<h4>stdout${p.following ? " (live)" : ""}</h4><pre class="log" data-testid="task-log" aria-live="polite">${p.log || "(empty)"}</pre>`
        : ""}
    </td></tr>`;
  }

  private act(what: "cancel" | "challenge", taskId?: bigint) {
    const owner = this.chain.wallet!.address;
    return this.action(async () => {
      if (what === "cancel") {
        const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgCancelJob", value: { owner, jobId: this.job!.id } }]);
        const { refunded } = marketTx.MsgCancelJobResponse.decode(res.msgResponses[0].value);
        return `Cancelled in block ${res.height}; ${dps(refunded)} refunded.`;
      }
      const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgChallenge", value: { owner, taskId } }]);
      const { disputeId } = marketTx.MsgChallengeResponse.decode(res.msgResponses[0].value);
      return `Task ${taskId} challenged in block ${res.height}: dispute ${disputeId}.`;
    });
  }

  /**
   * dispute says where the dispute of a disputed task stands (who opened it, the bond, the
   * outcome), or that a task is a member of a dispute's committee.
   */
  private dispute(t: marketTypes.Task) {
    if (t.disputeId === 0n) return "";
    const d = this.disputes.get(t.disputeId);
    if (!d) return html`<br /><small class="muted">dispute #${t.disputeId} (loading)</small>`;
    if (d.targetTask !== t.id) return html`<br /><small class="muted">committee member of dispute #${d.id}</small>`;
    const how = d.kind === marketTypes.DisputeKind.DISPUTE_KIND_CHALLENGE ? `challenged (bond ${dps(d.bond)})` : "its audit disagreed";
    return html`<br /><small data-testid="task-dispute">dispute #${d.id}: ${disputeStatus(d.status)}, ${how}; committee of ${d.committee.length}</small>`;
  }

  private timeUsed(t: marketTypes.Task): string {
    if (t.usage && t.usage.gpuSeconds > 0n) return `${t.usage.gpuSeconds} GPU-s`;
    const start = t.startedTime ? Number(t.startedTime.seconds) : 0;
    const end = t.commitTime ? Number(t.commitTime.seconds) : 0;
    if (start > 0 && end > start) return `${end - start}s`;
    if (start > 0) return `running ${Math.max(0, Math.round(Date.now() / 1000 - start))}s`;
    return "—";
  }

  render() {
    const j = this.job;
    const owner = j && this.chain.wallet?.address === j.owner;
    const status = j ? jobStatus(j.status) : "";
    return html`<section aria-labelledby="job-h">
      <h2 id="job-h">Job #${this.jobId}</h2>
      ${this.state()}
      ${j
        ? html`<p>
              Status <span class="status s-${status.toLowerCase()}" data-testid="job-status">${status}</span>;
              owner <a href="#/provider/${j.owner}">${short(j.owner)}</a>; escrow left <strong data-testid="job-escrow">${dps(j.escrow)}</strong>;
              ${j.tasksSettled} settled, ${j.tasksFailed} failed; submitted in block ${j.submittedHeight}${j.finishedHeight > 0n ? `, finished in block ${j.finishedHeight}` : ""}.
            </p>
            ${owner && !FINAL_JOB.has(status)
              ? html`<button class="danger" ?disabled=${this.busy} @click=${() => this.act("cancel")}>Cancel job</button>`
              : ""}
            ${owner
              ? html`<button
                  ?disabled=${this.busy}
                  title="Have the providers refuse the session keys this wallet gave them to read outputs and logs (if one may have leaked)"
                  @click=${() => this.endSessions()}
                >
                  End output sessions
                </button>`
              : ""}
            ${this.actionState()}
            <h3>Tasks</h3>
            <table class="list" aria-label="tasks">
              <thead><tr><th>Task</th><th>Status</th><th>Progress</th><th>Provider</th><th>Node</th><th>Price</th><th>Time used</th><th></th></tr></thead>
              <tbody>
                ${this.tasks.map((t) => {
                  const s = taskStatus(t.status);
                  const step = STEPS.indexOf(s);
                  return html`<tr data-testid="task-row">
                    <td>#${t.id} <span class="muted">(${t.index}.${t.replica})</span></td>
                    <td><span class="status s-${s.toLowerCase()}" data-testid="task-status">${s}</span>${t.reason ? html`<br /><small class="muted">${t.reason}</small>` : ""}${isFailedRoot(t.resultRoot)
                      ? html`<br /><small data-testid="task-failed-run">answered: the job failed on its run</small>`
                      : ""}${t.failures.map(
                      (f) => html`<br /><small data-testid="task-failure">failure reported by node #${f.nodeId} (${failureReason(f.reason)}${f.exitCode !== 0 ? `, exit code ${f.exitCode}` : ""}): ${failureOutcome(f.status)}${f.rerunSlashed && f.rerunSlashed !== "0" ? ` (its reruns were slashed ${dps(f.rerunSlashed)}: the most it loses unconfirmed)` : ""}</small>`,
                    )}${this.dispute(t)}</td>
                    <td>${step >= 0
                      ? html`<progress max=${STEPS.length - 1} value=${step} aria-label="task ${t.id} progress">${s}</progress>`
                      : "—"}</td>
                    <td>${t.provider ? html`<a href="#/provider/${t.provider}">${short(t.provider)}</a>` : "—"}</td>
                    <td>${t.nodeId > 0n ? `#${t.nodeId}` : "—"}</td>
                    <td data-testid="task-price">${t.price ? dps(t.price) : "—"}</td>
                    <td>${this.timeUsed(t)}</td>
                    <td>${owner && t.outputUri
                        ? html`<button class="link" @click=${() => this.outputs(t)}>Outputs</button>`
                        : ""}${owner && step >= STEPS.indexOf("RUNNING") && t.nodeId > 0n
                        ? html`<button class="link" @click=${() => this.logs(t)}>Logs</button>`
                        : ""}${owner && s === "VERIFIED" && t.disputeId === 0n
                      ? html`<button class="link" ?disabled=${this.busy} @click=${() => this.act("challenge", t.id)}>Challenge</button>`
                      : ""}</td>
                  </tr>
                  ${this.panel(t)}`;
                })}
              </tbody>
            </table>
            <h3>History</h3>
            <ol class="history">
              ${this.history.map(
                (h) => html`<li><span class="muted">block ${h.height}</span> ${h.event}${h.taskId > 0n ? ` task #${h.taskId}` : ""}${h.nodeId > 0n
                  ? ` node #${h.nodeId}`
                  : ""}${h.detail ? html` <small class="muted">${h.detail}</small>` : ""}</li>`,
              )}
            </ol>`
        : ""}
    </section>`;
  }
}
customElements.define("flops-job-view", JobView);

interface Panel {
  open?: boolean;
  busy?: boolean;
  error?: string;
  checked?: Checked;
  log: string;
  offset: number;
  following?: boolean;
}

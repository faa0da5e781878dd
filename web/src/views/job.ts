// One job: its tasks live (status, provider, price, time used, progress through the
// lifecycle), its history, and the owner's cancel and challenge buttons.
import { html } from "lit";
import { marketTx, marketTypes } from "@flopsnet/client";

import { dps, jobStatus, short, taskStatus } from "../format.js";
import { page } from "../page.js";
import { send } from "../tx.js";
import { View } from "../view.js";

const STEPS = ["PENDING", "ASSIGNED", "RUNNING", "COMMITTED", "REVEALED", "VERIFIED", "SETTLED"];
const FINAL_JOB = new Set(["COMPLETED", "FAILED", "CANCELLED"]);

export class JobView extends View {
  static properties = {
    ...View.properties,
    jobId: { attribute: "job-id" },
    job: { state: true },
    tasks: { state: true },
    history: { state: true },
    actionError: { state: true },
    actionResult: { state: true },
    busy: { state: true },
  };
  declare jobId: string;
  declare job: marketTypes.Job | undefined;
  declare tasks: marketTypes.Task[];
  declare history: marketTypes.HistoryEntry[];
  declare actionError: string | undefined;
  declare actionResult: string | undefined;
  declare busy: boolean;

  constructor() {
    super();
    this.tasks = [];
    this.history = [];
    this.busy = false;
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
  }

  private async act(what: "cancel" | "challenge", taskId?: bigint) {
    const w = this.chain.wallet!;
    this.actionError = undefined;
    this.actionResult = undefined;
    this.busy = true;
    try {
      if (what === "cancel") {
        const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgCancelJob", value: { owner: w.address, jobId: this.job!.id } }]);
        const { refunded } = marketTx.MsgCancelJobResponse.decode(res.msgResponses[0].value);
        this.actionResult = `Cancelled in block ${res.height}; ${dps(refunded)} refunded.`;
      } else {
        const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgChallenge", value: { owner: w.address, taskId } }]);
        const { disputeId } = marketTx.MsgChallengeResponse.decode(res.msgResponses[0].value);
        this.actionResult = `Task ${taskId} challenged in block ${res.height}: dispute ${disputeId}.`;
      }
      void this.reload();
    } catch (e) {
      this.actionError = e instanceof Error ? e.message : String(e);
    } finally {
      this.busy = false;
    }
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
            ${this.actionError ? html`<p class="error" role="alert">${this.actionError}</p>` : ""}
            ${this.actionResult ? html`<p class="ok" role="status">${this.actionResult}</p>` : ""}
            <h3>Tasks</h3>
            <table class="list" aria-label="tasks">
              <thead><tr><th>Task</th><th>Status</th><th>Progress</th><th>Provider</th><th>Node</th><th>Price</th><th>Time used</th><th></th></tr></thead>
              <tbody>
                ${this.tasks.map((t) => {
                  const s = taskStatus(t.status);
                  const step = STEPS.indexOf(s);
                  return html`<tr data-testid="task-row">
                    <td>#${t.id} <span class="muted">(${t.index}.${t.replica})</span></td>
                    <td><span class="status s-${s.toLowerCase()}" data-testid="task-status">${s}</span>${t.reason ? html`<br /><small class="muted">${t.reason}</small>` : ""}</td>
                    <td>${step >= 0
                      ? html`<progress max=${STEPS.length - 1} value=${step} aria-label="task ${t.id} progress">${s}</progress>`
                      : "—"}</td>
                    <td>${t.provider ? html`<a href="#/provider/${t.provider}">${short(t.provider)}</a>` : "—"}</td>
                    <td>${t.nodeId > 0n ? `#${t.nodeId}` : "—"}</td>
                    <td data-testid="task-price">${t.price ? dps(t.price) : "—"}</td>
                    <td>${this.timeUsed(t)}</td>
                    <td>${owner && (s === "REVEALED" || s === "VERIFIED")
                      ? html`<button class="link" ?disabled=${this.busy} @click=${() => this.act("challenge", t.id)}>Challenge</button>`
                      : ""}</td>
                  </tr>`;
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

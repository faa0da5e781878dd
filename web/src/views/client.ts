// The client view: connect a wallet, submit a job from a form or a pasted spec (YAML or
// JSON, as the CLI reads it), see the escrow it locks before signing, and follow your jobs.
import { html, nothing } from "lit";
import { gflTypes, jobSpecFromJSON, marketTx, marketTypes, poolSpecFromJSON, SpecError } from "@flopsnet/client";

import poolExample from "../../../examples/pool.yaml?raw";

import { dps, jobStatus } from "../format.js";
import { page } from "../page.js";
import { send, TxError } from "../tx.js";
import { View } from "../view.js";
import { keplrAvailable, keplrWallet, localWallet } from "../wallet.js";

const enumOptions = (values: Record<string, string | number>, prefix: string) =>
  Object.keys(values).filter((k) => k.startsWith(prefix) && !k.endsWith("_UNSPECIFIED"));

interface Field {
  name: string;
  label: string;
  kind: "text" | "number" | "select" | "dps" | "datetime";
  options?: string[];
  help?: string;
}

// The form's fields, named by their path in the spec (as the chain names them in errors).
const FIELDS: Field[] = [
  { name: "workload", label: "Workload", kind: "select", options: enumOptions(gflTypes.WorkloadClass, "WORKLOAD_CLASS_") },
  { name: "runtime", label: "Runtime", kind: "select", options: enumOptions(gflTypes.Runtime, "RUNTIME_") },
  { name: "image", label: "Image", kind: "text", help: "BUILTIN: gemm or checksum; CONTAINER: repo@sha256:<digest>" },
  { name: "command", label: "Command", kind: "text", help: "PROCESS and CONTAINER: the arguments, separated by spaces" },
  { name: "builtin.gemm_n", label: "GEMM n", kind: "number" },
  { name: "builtin.gemm_r", label: "GEMM rounds", kind: "number" },
  { name: "requirements.gpu_count", label: "GPUs per task", kind: "number" },
  { name: "requirements.min_memory_mib", label: "Min GPU memory (MiB)", kind: "number" },
  { name: "requirements.min_compute_capability", label: "Min compute capability", kind: "text" },
  { name: "requirements.region", label: "Region", kind: "text", help: "empty: any" },
  { name: "requirements.disk_mib_per_gpu", label: "Disk per GPU (MiB)", kind: "number", help: "0: the market's task_disk_mib_per_gpu, on any node; more: only nodes that offer it" },
  { name: "task_count", label: "Tasks", kind: "number" },
  { name: "replicas", label: "Replicas", kind: "number" },
  { name: "verification", label: "Verification", kind: "select", options: enumOptions(marketTypes.VerificationClass, "VERIFICATION_CLASS_") },
  { name: "mode", label: "Allocation", kind: "select", options: enumOptions(marketTypes.AllocationMode, "ALLOCATION_MODE_") },
  { name: "max_price_per_task", label: "Max price per task (DPS)", kind: "dps" },
  { name: "priority_tip", label: "Priority tip per task (DPS)", kind: "dps" },
  { name: "verification_budget", label: "Verification budget (DPS)", kind: "dps" },
  { name: "max_duration", label: "Max duration per task", kind: "text", help: "e.g. 600s or 10m" },
  { name: "deadline", label: "Deadline", kind: "datetime" },
  { name: "checkpoint_interval", label: "Checkpoint interval", kind: "text", help: "0s: none" },
];

const DEFAULTS: Record<string, string> = {
  workload: "WORKLOAD_CLASS_BATCH",
  runtime: "RUNTIME_BUILTIN",
  image: "gemm",
  command: "",
  "builtin.gemm_n": "256",
  "builtin.gemm_r": "2",
  "requirements.gpu_count": "1",
  "requirements.min_memory_mib": "0",
  "requirements.min_compute_capability": "",
  "requirements.region": "",
  "requirements.disk_mib_per_gpu": "0",
  task_count: "1",
  replicas: "1",
  verification: "VERIFICATION_CLASS_BUILTIN_GEMM",
  mode: "ALLOCATION_MODE_ASSIGN",
  max_price_per_task: "5",
  priority_tip: "0",
  verification_budget: "0",
  max_duration: "600s",
  deadline: "",
  checkpoint_interval: "0s",
};

/** udpsOf reads a DPS amount ("5", "0.1") as udps; undefined when it is not one. */
export function udpsOf(s: string): bigint | undefined {
  const m = /^\s*(\d+)(?:\.(\d{0,6}))?\s*$/.exec(s);
  if (!m) return undefined;
  return BigInt(m[1]) * 1_000_000n + BigInt((m[2] ?? "").padEnd(6, "0") || "0");
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown) {
  const parts = path.split(".");
  let o = obj;
  for (const p of parts.slice(0, -1)) o = (o[p] ??= {}) as Record<string, unknown>;
  o[parts[parts.length - 1]] = value;
}

export class ClientView extends View {
  static properties = {
    ...View.properties,
    values: { state: true },
    fieldErrors: { state: true },
    formError: { state: true },
    pasted: { state: true },
    usePaste: { state: true },
    result: { state: true },
    jobs: { state: true },
    balance: { state: true },
    walletError: { state: true },
    pools: { state: true },
    poolText: { state: true },
    poolError: { state: true },
    poolBusy: { state: true },
  };
  declare values: Record<string, string>;
  declare fieldErrors: Record<string, string>;
  declare formError: string | undefined;
  declare pasted: string;
  declare usePaste: boolean;
  declare result: string | undefined;
  declare jobs: marketTypes.Job[];
  declare balance: string | undefined;
  declare walletError: string | undefined;
  declare pools: marketTypes.Pool[];
  declare poolText: string;
  declare poolError: string | undefined;
  declare poolBusy: boolean;

  constructor() {
    super();
    const deadline = new Date(Date.now() + 24 * 3600 * 1000);
    deadline.setSeconds(0, 0);
    this.values = { ...DEFAULTS, deadline: deadline.toISOString().slice(0, 16) };
    this.fieldErrors = {};
    this.pasted = "";
    this.usePaste = false;
    this.jobs = [];
    this.pools = [];
    this.poolText = poolExample;
    this.poolBusy = false;
  }

  protected async load(): Promise<void> {
    const w = this.chain.wallet;
    if (!w) {
      this.loading = false;
      return;
    }
    const [jobs, bal, pools] = await Promise.all([
      // without their specs (the list shows none): 28 of the largest legal specs pass what
      // a node lets one query read
      this.chain.q.market.JobsByOwner({ owner: w.address, omitSpec: true, pagination: page(50, { reverse: true }) }),
      this.chain.q.stargate.getBalance(w.address, "udps"),
      // the client's own pools by the chain's owner index: reading every pool (each with its
      // spec, up to about 330 KB) let a stranger's big pools make the node refuse the view;
      // without their specs, which the list does not show
      this.chain.q.market.PoolsByOwner({ owner: w.address, omitSpec: true, pagination: page(100, { reverse: true }) }),
    ]);
    this.jobs = jobs.jobs;
    this.balance = bal.amount;
    this.pools = pools.pools;
  }

  private async connect(kind: "keplr" | "local") {
    this.walletError = undefined;
    try {
      const w = kind === "keplr" ? await keplrWallet(this.chain.config) : await localWallet(this.chain.config.devMnemonic!);
      await this.chain.connectWallet(w);
    } catch (e) {
      this.walletError = e instanceof Error ? e.message : String(e);
    }
  }

  /** specInput builds the spec as the CLI's files write it, from the form or the paste. */
  private specInput(): string | object {
    if (this.usePaste) return this.pasted;
    const v = this.values;
    const spec: Record<string, unknown> = {};
    for (const f of FIELDS) {
      const raw = v[f.name] ?? "";
      if (f.kind === "number") {
        if (raw.trim() === "") continue;
        if (!/^\d+$/.test(raw.trim())) throw new SpecError(f.name, `"${raw}": a whole number, 0 or more`);
        setPath(spec, f.name, raw.trim());
      } else if (f.kind === "dps") {
        const u = udpsOf(raw);
        if (u === undefined) throw new SpecError(f.name, `"${raw}": an amount of DPS, e.g. 5 or 0.25`);
        setPath(spec, f.name, `${u}udps`);
      } else if (f.kind === "datetime") {
        const t = new Date(raw);
        if (raw === "" || Number.isNaN(t.getTime())) throw new SpecError(f.name, "a date and time");
        setPath(spec, f.name, t.toISOString());
      } else if (f.name === "command") {
        const args = raw.split(/\s+/).filter(Boolean);
        if (args.length) spec.command = args;
      } else if (raw !== "") {
        setPath(spec, f.name, raw);
      }
    }
    return spec;
  }

  /** escrow: task_count x replicas x (max_price_per_task + priority_tip) + verification_budget. */
  private escrow(): bigint | undefined {
    try {
      const s = jobSpecFromJSON(this.specInput());
      return (
        BigInt(s.taskCount) * BigInt(s.replicas) * (BigInt(s.maxPricePerTask?.amount || "0") + BigInt(s.priorityTip?.amount || "0")) +
        BigInt(s.verificationBudget?.amount || "0")
      );
    } catch {
      return undefined;
    }
  }

  private async submit(e: Event) {
    e.preventDefault();
    this.fieldErrors = {};
    this.formError = undefined;
    this.result = undefined;
    const w = this.chain.wallet;
    if (!w) return;
    let spec: marketTypes.JobSpec;
    try {
      spec = jobSpecFromJSON(this.specInput());
    } catch (err) {
      if (err instanceof SpecError) this.showError(err.field, err.message);
      else this.formError = err instanceof Error ? err.message : String(err);
      return;
    }
    this.busy = true;
    try {
      const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgSubmitJob", value: { owner: w.address, spec } }]);
      const { jobId, escrow } = marketTx.MsgSubmitJobResponse.decode(res.msgResponses[0].value);
      this.result = `Job ${jobId} submitted in block ${res.height}; ${dps(escrow)} locked in escrow.`;
      void this.reload();
      location.hash = `#/job/${jobId}`;
    } catch (err) {
      if (err instanceof TxError && err.field) this.showError(err.field, err.message);
      else this.formError = err instanceof Error ? err.message : String(err);
    } finally {
      this.busy = false;
    }
  }

  private showError(field: string, message: string) {
    const known = FIELDS.find((f) => f.name === field || field.startsWith(f.name + ".") || field.startsWith(f.name + "["));
    if (known && !this.usePaste) this.fieldErrors = { [known.name]: message };
    else this.formError = message;
  }

  private input(f: Field) {
    const id = `f-${f.name.replace(/[.[\]]/g, "-")}`;
    const err = this.fieldErrors[f.name];
    const onInput = (e: Event) => {
      this.values = { ...this.values, [f.name]: (e.target as HTMLInputElement).value };
      if (err) this.fieldErrors = {};
    };
    return html`<div class="field ${err ? "invalid" : ""}">
      <label for=${id}>${f.label}</label>
      ${f.kind === "select"
        ? html`<select id=${id} name=${f.name} .value=${this.values[f.name]} @change=${onInput} aria-invalid=${err ? "true" : "false"}>
            ${f.options!.map((o) => html`<option value=${o} ?selected=${o === this.values[f.name]}>${o}</option>`)}
          </select>`
        : html`<input
            id=${id}
            name=${f.name}
            type=${f.kind === "datetime" ? "datetime-local" : "text"}
            inputmode=${f.kind === "number" || f.kind === "dps" ? "decimal" : "text"}
            .value=${this.values[f.name]}
            @input=${onInput}
            aria-invalid=${err ? "true" : "false"}
            aria-describedby=${err ? `${id}-err` : nothing}
          />`}
      ${f.help ? html`<small class="muted">${f.help}</small>` : ""}
      ${err ? html`<small class="field-error" id="${id}-err" role="alert">${err}</small>` : ""}
    </div>`;
  }

  render() {
    const w = this.chain.wallet;
    const escrow = this.escrow();
    return html`<section aria-labelledby="client-h">
      <h2 id="client-h">Client</h2>
      ${w
        ? html`<p class="wallet">Signed in as <code data-testid="address">${w.address}</code> (${w.kind === "keplr" ? "Keplr" : "local test key"}),
            balance <strong data-testid="balance">${dps(this.balance)}</strong>
            <button class="link" @click=${() => this.chain.disconnectWallet()}>Disconnect</button></p>`
        : html`<div class="connect">
            <p>Connect a wallet to submit and follow jobs.</p>
            <button @click=${() => this.connect("keplr")} ?disabled=${!keplrAvailable()}>Connect Keplr</button>
            ${this.chain.config.devMnemonic ? html`<button @click=${() => this.connect("local")}>Use the local test key</button>` : ""}
            ${!keplrAvailable() ? html`<p class="muted">Keplr is not installed in this browser.</p>` : ""}
            ${this.walletError ? html`<p class="error" role="alert">${this.walletError}</p>` : ""}
          </div>`}
      ${this.state()}
      ${w ? this.form(escrow) : ""} ${w ? this.jobList() : ""} ${w ? this.poolSection() : ""}
    </section>`;
  }

  private form(escrow: bigint | undefined) {
    return html`<form class="job-form" @submit=${this.submit} aria-labelledby="submit-h" novalidate>
      <h3 id="submit-h">Submit a job</h3>
      <div class="tabs" role="tablist">
        <button type="button" role="tab" aria-selected=${!this.usePaste} @click=${() => (this.usePaste = false)}>Form</button>
        <button type="button" role="tab" aria-selected=${this.usePaste} @click=${() => (this.usePaste = true)}>Paste a spec</button>
      </div>
      ${this.usePaste
        ? html`<div class="field">
            <label for="f-pasted">Job spec (YAML or JSON, as for <code>flopsd tx market submit-job</code>)</label>
            <textarea id="f-pasted" rows="14" .value=${this.pasted} @input=${(e: Event) => (this.pasted = (e.target as HTMLTextAreaElement).value)}></textarea>
          </div>`
        : html`<div class="grid">${FIELDS.map((f) => this.input(f))}</div>`}
      <p class="escrow">Escrow it will lock: <strong data-testid="escrow">${escrow === undefined ? "—" : dps(escrow)}</strong>
        <span class="muted">(tasks × replicas × (price + tip) + verification budget; what is not spent is refunded)</span></p>
      ${this.formError ? html`<p class="error" role="alert" data-testid="form-error">${this.formError}</p>` : ""}
      ${this.result ? html`<p class="ok" role="status">${this.result}</p>` : ""}
      <button type="submit" ?disabled=${this.busy}>${this.busy ? "Submitting…" : "Submit job"}</button>
    </form>`;
  }

  private async openPool(e: Event) {
    e.preventDefault();
    this.poolError = undefined;
    const w = this.chain.wallet!;
    this.poolBusy = true;
    try {
      const spec = poolSpecFromJSON(this.poolText);
      const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgCreatePool", value: { owner: w.address, spec } }]);
      const { poolId } = marketTx.MsgCreatePoolResponse.decode(res.msgResponses[0].value);
      location.hash = `#/pool/${poolId}`;
    } catch (err) {
      this.poolError = err instanceof Error ? err.message : String(err);
    } finally {
      this.poolBusy = false;
    }
  }

  private poolSection() {
    return html`<h3>Your pools</h3>
      ${this.pools.length === 0
        ? html`<p class="muted">No pools yet.</p>`
        : html`<table class="list" aria-label="your pools">
            <thead><tr><th>Pool</th><th>Status</th><th>Members</th><th>Open units</th><th>Paid units</th><th>Escrow</th></tr></thead>
            <tbody>${this.pools.map(
              (p) => html`<tr><td><a href="#/pool/${p.id}">#${p.id}</a></td><td>${marketTypes.poolStatusToJSON(p.status).replace("POOL_STATUS_", "")}</td>
                <td>${p.members}</td><td>${p.openUnits}</td><td>${p.paidUnits}</td><td>${dps(p.escrow)}</td></tr>`,
            )}</tbody>
          </table>`}
      <form class="job-form" @submit=${this.openPool} aria-labelledby="pool-open-h">
        <h3 id="pool-open-h">Open a pool</h3>
        <div class="field">
          <label for="f-pool">Pool spec (YAML or JSON, as for <code>flopsd tx market create-pool</code>); its budget is escrowed</label>
          <textarea id="f-pool" rows="12" .value=${this.poolText} @input=${(e: Event) => (this.poolText = (e.target as HTMLTextAreaElement).value)}></textarea>
        </div>
        ${this.poolError ? html`<p class="error" role="alert">${this.poolError}</p>` : ""}
        <button type="submit" ?disabled=${this.poolBusy}>${this.poolBusy ? "Opening…" : "Open pool"}</button>
      </form>`;
  }

  private jobList() {
    return html`<h3>Your jobs</h3>
      ${this.jobs.length === 0
        ? html`<p class="muted">No jobs yet.</p>`
        : html`<table class="list" aria-label="your jobs">
            <thead><tr><th>Job</th><th>Status</th><th>Settled</th><th>Failed</th><th>Escrow</th><th>Submitted</th></tr></thead>
            <tbody>${this.jobs.map(
              (j) => html`<tr>
                <td><a href="#/job/${j.id}">#${j.id}</a></td>
                <td><span class="status s-${jobStatus(j.status).toLowerCase()}">${jobStatus(j.status)}</span></td>
                <td>${j.tasksSettled}</td><td>${j.tasksFailed}</td><td>${dps(j.escrow)}</td><td>block ${j.submittedHeight}</td>
              </tr>`,
            )}</tbody>
          </table>`}`;
  }
}
customElements.define("flops-client-view", ClientView);

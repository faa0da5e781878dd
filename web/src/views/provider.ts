// The provider view, for any address: its nodes (GPUs, class, verified power, PoCP
// challenges passed and failed, reputation and its history), collateral (bonded, at risk,
// unbonding), slashes with reasons, earnings per epoch (task payments, availability and
// work rewards) and the tasks in flight.
import { html } from "lit";
import { fromBech32 } from "@cosmjs/encoding";
import { chain as flops, gflTypes, marketTypes, reputationTypes, stakingslashTypes } from "@flopsnet/client";

import { dps, dec, decNumber, gflops, nodeStatus, slashReason, taskStatus } from "../format.js";
import { epochEnds, epochOf, paymentsTo, powerHistory } from "../chain.js";
import { all, page } from "../page.js";
import { View } from "../view.js";
import type { Series } from "../chart.js";

interface NodeRow {
  node: gflTypes.Node;
  power: bigint;
  median: bigint;
  availabilityPpm: number;
  stats?: gflTypes.NodeEpochStats;
  score?: string;
  eligible: boolean;
  history: reputationTypes.ScoreRecord[];
  powerSeries: { height: number; gflops: number }[];
  /** askCap is the cap of the node's class in the last reward distribution, if any. */
  askCap?: { cap: string; epoch: bigint };
}

/** askLine is a node's ask per GPU-hour beside its class's cap in the last reward
 * distribution: a node asking more earns no availability reward (x/dps, "Priced out"). */
export function askLine(n: Pick<NodeRow, "node" | "askCap">): string {
  const ask = n.node.askPerGpuHour?.amount ?? "0";
  const line = `Ask ${dps(ask)} per GPU-hour`;
  if (!n.askCap) return line;
  if (BigInt(ask) > BigInt(n.askCap.cap)) {
    return `${line}: above its class's cap of ${dps(n.askCap.cap)} (epoch ${n.askCap.epoch}), so it earns no availability reward`;
  }
  return `${line}, within its class's cap of ${dps(n.askCap.cap)} (epoch ${n.askCap.epoch})`;
}

interface EpochEarnings {
  epoch: number;
  payments: bigint;
  availability: bigint;
  work: bigint;
}

interface ProviderData {
  nodes: NodeRow[];
  collateral?: stakingslashTypes.Collateral;
  unbonding: string;
  required: string;
  unbondings: stakingslashTypes.UnbondingEntry[];
  slashes: stakingslashTypes.SlashRecord[];
  reputation: string;
  perEpoch: EpochEarnings[];
  earnings: Series[];
  totals: { payments: bigint; tasksPaid: number; availability: bigint; work: bigint };
  inFlight: marketTypes.Task[];
}

export class ProviderView extends View {
  static properties = { ...View.properties, address: {}, data: { state: true } };
  declare address: string;
  declare data: ProviderData | undefined;

  protected async load(): Promise<void> {
    const addr = this.address;
    if (!addr) {
      this.data = undefined;
      return;
    }
    const q = this.chain.q;
    const [nodes, coll, unb, slashes, rep, rewards, tasks, latest] = await Promise.all([
      q.gfl.NodesByOperator({ operator: addr, pagination: page(200) }),
      q.stakingslash.Collateral({ provider: addr }),
      q.stakingslash.Unbondings({ provider: addr, pagination: page(100) }),
      q.stakingslash.SlashHistory({ provider: addr, pagination: page(100, { reverse: true }) }),
      q.reputation.Provider({ operator: addr }),
      q.dps.ProviderRewards({ provider: addr, pagination: page(50, { reverse: true }) }),
      // a page of the tasks in flight (by node, newest first) makes at most 5,000 reads and
      // may end short of its limit, so it is paged to the end (or 200 tasks)
      all(async (p) => {
        const r = await q.market.TasksByProvider({ provider: addr, active: true, pagination: p });
        return { items: r.tasks, nextKey: r.pagination?.nextKey };
      }, 200),
      // each class's ask cap in the last reward distribution (x/dps, "Priced out")
      q.dps.LatestEmission({}),
    ]);
    const caps = new Map<string, { cap: string; epoch: bigint }>();
    if (latest.found && latest.distribution) {
      for (const c of latest.distribution.askCaps) caps.set(c.gpuClass, { cap: c.cap, epoch: latest.distribution.epoch });
    }
    const rows = await Promise.all(
      nodes.nodes.map(async (node): Promise<NodeRow> => {
        const [power, stats, score, history, powerSeries] = await Promise.all([
          q.gfl.NodePower({ nodeId: node.id }),
          q.gfl.NodeStats({ nodeId: node.id }),
          q.reputation.Score({ nodeId: node.id }),
          q.reputation.History({ nodeId: node.id, pagination: page(50, { reverse: true }) }),
          this.powerSeries(node.id),
        ]);
        return {
          node,
          askCap: caps.get(node.gpuClass),
          power: power.powerGflops,
          median: power.medianGflops,
          availabilityPpm: power.availabilityPpm,
          stats: stats.stats,
          score: score.known ? score.score?.score : undefined,
          eligible: score.eligible,
          history: [...history.history].sort((a, b) => Number(a.epoch - b.epoch)),
          powerSeries,
        };
      }),
    );
    const rewardList = [...rewards.rewards].sort((a, b) => Number(a.epoch - b.epoch));
    const [paid, ends] = await Promise.all([paymentsTo(this.chain.q.comet, addr), epochEnds(this.chain.q.comet)]);
    const toDps = (u: string | bigint) => Number(BigInt(u || "0")) / 1e6;
    // earnings per reward epoch: task payments (settlements, by the epoch of their block)
    // beside the epoch's availability and work rewards
    const byEpoch = new Map<number, EpochEarnings>();
    const row = (e: number) => {
      if (!byEpoch.has(e)) byEpoch.set(e, { epoch: e, payments: 0n, availability: 0n, work: 0n });
      return byEpoch.get(e)!;
    };
    for (const p of paid) {
      const e = epochOf(p.height, ends);
      if (e !== undefined) row(e).payments += p.paid;
    }
    for (const r of rewardList) {
      row(Number(r.epoch)).availability += BigInt(r.availability || "0");
      row(Number(r.epoch)).work += BigInt(r.work || "0");
    }
    const perEpoch = [...byEpoch.values()].sort((a, b) => a.epoch - b.epoch);
    this.data = {
      nodes: rows,
      collateral: coll.collateral,
      unbonding: coll.unbonding,
      required: coll.required,
      unbondings: unb.unbondings,
      slashes: slashes.slashes,
      reputation: rep.score,
      perEpoch,
      earnings: [
        { label: "task payments (DPS)", values: perEpoch.map((r) => toDps(r.payments)) },
        { label: "availability (DPS)", values: perEpoch.map((r) => toDps(r.availability)) },
        { label: "work rewards (DPS)", values: perEpoch.map((r) => toDps(r.work)) },
      ],
      totals: {
        payments: paid.reduce((a, p) => a + p.paid, 0n),
        tasksPaid: paid.length,
        availability: rewardList.reduce((a, r) => a + BigInt(r.availability || "0"), 0n),
        work: rewardList.reduce((a, r) => a + BigInt(r.work || "0"), 0n),
      },
      inFlight: tasks,
    };
  }

  // The power history is read again only every 20 blocks: it is 16 historical queries.
  private powerCache = new Map<bigint, { at: number; series: { height: number; gflops: number }[] }>();
  private async powerSeries(nodeId: bigint) {
    const h = this.chain.status.height;
    const c = this.powerCache.get(nodeId);
    if (c && h - c.at < 20) return c.series;
    const series = await powerHistory(this.chain.q.comet, nodeId, h);
    this.powerCache.set(nodeId, { at: h, series });
    return series;
  }

  protected willUpdate(changed: Map<string, unknown>): void {
    if (changed.has("address") && changed.get("address") !== undefined) {
      this.loading = true;
      void this.reload();
    }
  }

  private lookup(e: Event) {
    e.preventDefault();
    const v = (new FormData(e.target as HTMLFormElement).get("address") as string).trim();
    location.hash = `#/provider/${v}`;
  }

  render() {
    const d = this.data;
    const valid = !this.address || validAddress(this.address);
    return html`<section aria-labelledby="provider-h">
      <h2 id="provider-h">Provider</h2>
      <form class="inline" @submit=${this.lookup} role="search">
        <label for="provider-address">Provider address</label>
        <input id="provider-address" name="address" .value=${this.address ?? ""} placeholder="flops1…" size="46" />
        <button type="submit">Show</button>
        ${this.chain.wallet ? html`<a href="#/provider/${this.chain.wallet.address}">mine</a>` : ""}
      </form>
      ${!valid ? html`<p class="error" role="alert">${this.address}: not a flops address</p>` : this.state()}
      ${d && valid ? this.body(d) : ""}
    </section>`;
  }

  private body(d: ProviderData) {
    const c = d.collateral;
    return html`<div class="cards">
        <div class="card"><h3>Collateral bonded</h3><p class="big" data-testid="bonded">${dps(c?.bonded ?? "0")}</p>
          <p class="muted">${dps(d.required)} required for its GPUs${c?.jailed ? html`; <strong class="error">jailed</strong>` : ""}</p></div>
        <div class="card"><h3>At risk</h3><p class="big">${dps(c?.exposure ?? "0")}</p><p class="muted">exposure of the tasks it holds</p></div>
        <div class="card"><h3>Unbonding</h3><p class="big">${dps(d.unbonding)}</p><p class="muted">${d.unbondings.length} entries</p></div>
        <div class="card"><h3>Reputation</h3><p class="big">${dec(d.reputation)}</p><p class="muted">slashed in all ${dps(c?.slashedTotal ?? "0")}</p></div>
        <div class="card"><h3>Earned</h3><p class="big" data-testid="payments">${dps(d.totals.payments)}</p>
          <p class="muted">for ${d.totals.tasksPaid} tasks; ${dps(d.totals.availability)} availability and ${dps(d.totals.work)} work rewards</p></div>
      </div>
      <h3>Nodes</h3>
      ${d.nodes.length === 0 ? html`<p class="muted">No nodes registered by this address.</p>` : ""}
      <div class="nodes">
        ${d.nodes.map(
          (n) => html`<article class="node" data-testid="node" aria-label="node ${n.node.id}">
            <h4>Node #${n.node.id} <span class="status s-${nodeStatus(n.node.status).toLowerCase()}">${nodeStatus(n.node.status)}</span></h4>
            <p>${n.node.gpus.length} × ${n.node.gpus[0]?.model ?? "GPU"} · class <strong>${n.node.gpuClass || "—"}</strong> · ${n.node.region || "no region"} · <span data-testid="node-disk">${n.node.diskMibPerGpu > 0n ? `${n.node.diskMibPerGpu % 1024n === 0n ? `${n.node.diskMibPerGpu / 1024n} GiB` : `${n.node.diskMibPerGpu} MiB`} disk offered per GPU` : "no disk offered beyond the market's default"}</span></p>
            ${n.node.status === gflTypes.NodeStatus.NODE_STATUS_DRAINING
              ? html`<p data-testid="node-draining">Draining: it takes no new work and is deactivated, its collateral unlocked, when its
                  ${d.inFlight.filter((t) => t.nodeId === n.node.id && drainWaitsFor.includes(t.status)).length} tasks in flight end.</p>`
              : ""}
            <p data-testid="node-ask">${askLine(n)}</p>
            <p>Verified power <strong data-testid="node-power">${gflops(n.power)}</strong> <span class="muted">(median ${gflops(n.median)}, claimed
              ${gflops(n.node.claimedGflops)}, availability ${(n.availabilityPpm / 10000).toFixed(1)}%)</span></p>
            <p>PoCP this epoch: ${n.stats ? html`${n.stats.passed} passed, ${n.stats.failed} failed, ${n.stats.missed} missed of ${n.stats.issued}` : "none yet"}</p>
            <p>Reputation ${n.score ? dec(n.score) : "not scored yet"}${n.eligible ? "" : html` <span class="muted">(not yet eligible for work rewards)</span>`}</p>
            ${n.powerSeries.length > 1
              ? html`<flops-line-chart label="Node ${n.node.id}: verified power (GFLOP/s)" x-label="block" .x=${n.powerSeries.map((p) => p.height)}
                  .series=${[{ label: "GFLOP/s", values: n.powerSeries.map((p) => p.gflops) }]}></flops-line-chart>`
              : ""}
            ${n.history.length > 1
              ? html`<flops-line-chart label="Node ${n.node.id}: reputation by epoch" x-label="epoch" .x=${n.history.map((h) => Number(h.epoch))}
                  .series=${[
                    { label: "score", values: n.history.map((h) => decNumber(h.score)) },
                    { label: "accuracy", values: n.history.map((h) => decNumber(h.accuracy)) },
                    { label: "responsiveness", values: n.history.map((h) => decNumber(h.responsiveness)) },
                  ]}></flops-line-chart>`
              : ""}
          </article>`,
        )}
      </div>
      <flops-line-chart label="Earnings per epoch" x-label="epoch" .x=${d.perEpoch.map((r) => r.epoch)} .series=${d.earnings}></flops-line-chart>
      <details>
        <summary>Earnings per epoch as a table</summary>
        <table class="list" aria-label="earnings per epoch">
          <thead><tr><th>Epoch</th><th>Task payments</th><th>Availability</th><th>Work rewards</th></tr></thead>
          <tbody>${d.perEpoch.map(
            (r) => html`<tr data-testid="epoch-earnings" data-epoch=${r.epoch} data-payments=${r.payments.toString()}>
              <td>${r.epoch}</td><td>${dps(r.payments)}</td><td>${dps(r.availability)}</td><td>${dps(r.work)}</td></tr>`,
          )}</tbody>
        </table>
      </details>
      <h3>Tasks in flight</h3>
      ${d.inFlight.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<table class="list" aria-label="tasks in flight">
            <thead><tr><th>Task</th><th>Job</th><th>Status</th><th>Node</th><th>Price</th></tr></thead>
            <tbody>${d.inFlight.map(
              (t) => html`<tr><td>#${t.id}</td><td><a href="#/job/${t.jobId}">#${t.jobId}</a></td><td>${taskStatus(t.status)}</td><td>#${t.nodeId}</td><td>${dps(t.price)}</td></tr>`,
            )}</tbody>
          </table>`}
      <h3>Slashes</h3>
      ${d.slashes.length === 0
        ? html`<p class="muted">Never slashed.</p>`
        : html`<table class="list" aria-label="slashes">
            <thead><tr><th>Block</th><th>Reason</th><th>Amount</th><th>Fraction</th><th>Burned</th></tr></thead>
            <tbody>${d.slashes.map(
              (s) => html`<tr><td>${s.height}</td><td>${slashReason(s.reason)}</td><td>${dps(s.amount)}</td><td>${(s.fractionPpm / 10000).toFixed(2)}%</td><td>${dps(s.burned)}</td></tr>`,
            )}</tbody>
          </table>`}`;
  }
}

/** the task statuses a drain waits for (x/market's inFlight): assigned, running, committed */
const drainWaitsFor = [marketTypes.TaskStatus.TASK_STATUS_ASSIGNED, marketTypes.TaskStatus.TASK_STATUS_RUNNING, marketTypes.TaskStatus.TASK_STATUS_COMMITTED];

/** validAddress: a bech32 account address with the flops prefix. */
function validAddress(a: string): boolean {
  try {
    return fromBech32(a, 90).prefix === flops.bech32Prefix; // 0.39 fails on its default limit (Infinity)
  } catch {
    return false;
  }
}

customElements.define("flops-provider-view", ProviderView);

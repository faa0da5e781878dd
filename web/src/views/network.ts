// The network view: the GFL index and its history by epoch, schedulable nodes by class
// and region, nodes by status, jobs by status, the queue (pending tasks) and time to
// assignment, emission per epoch, halving progress and the reward pool.
//
// No figure reads a whole table: the queue is the scheduler's counts (Queue, one record),
// the time to assignment reads the 200 newest tasks, jobs by status are the chain's
// counts (JobCounts, one record), schedulable nodes by class and region
// are the chain's counts (a key a class or region: SchedulableByClass and
// SchedulableByRegion), nodes by status are counted on their index. A node that does not
// answer one of them (a big chain's query past the node's gas limit, or a node from
// before the query) is said so for that figure, and the view shows the rest.
import { html } from "lit";
import { gflTypes, marketTypes } from "@flopsnet/client";

import { errorText } from "../chain.js";
import { dec, dps, gfl, jobStatus, nodeStatus, workload } from "../format.js";
import { all, page } from "../page.js";
import { View } from "../view.js";
import type { Series } from "../chart.js";

interface NetworkData {
  totalGflops: bigint;
  activeNodes: bigint;
  byWorkload: { label: string; value: number }[];
  byClass: { label: string; value: number }[] | Refused;
  /** the regions with the most schedulable nodes, the rest as one bar */
  byRegion: { label: string; value: number }[] | Refused;
  /** the chain has more regions than the view read (regionsRead, by name) */
  regionsCut: boolean;
  byStatus: { label: string; value: number }[] | Refused;
  jobs: { label: string; value: number }[] | Refused;
  pendingTasks: number | Refused;
  assignBlocks?: { median: number; max: number; n: number };
  /** the node's refusal of the recent tasks, over which assignBlocks is measured */
  recentRefused?: Refused;
  epochs: number[];
  gflByEpoch: Series[];
  emissionByEpoch: Series[];
  era: number;
  rate: string;
  nextHalving?: Date;
  lastHalving?: Date;
  pool: string;
  owed: string;
}

/** the node statuses, in enum order */
const nodeStatuses = [
  gflTypes.NodeStatus.NODE_STATUS_PENDING,
  gflTypes.NodeStatus.NODE_STATUS_ACTIVE,
  gflTypes.NodeStatus.NODE_STATUS_INACTIVE,
  gflTypes.NodeStatus.NODE_STATUS_DRAINING,
];

/** how many regions the region chart reads (500 a page; a node's region is its
 * provider's to name, so there may be many), and how many it shows as bars */
const regionsRead = 5000;
const regionBars = 12;

/** byCount: bars in descending order of their counts (then by name). */
const byCount = (items: { label: string; value: number }[]) => [...items].sort((a, b) => b.value - a.value || a.label.localeCompare(b.label));

/** topBars: the n - 1 largest counts as bars, the rest summed in one (n bars at most). */
const topBars = (items: { label: string; value: number }[], n: number, rest: string) => {
  const sorted = byCount(items);
  if (sorted.length <= n) return sorted;
  const others = sorted.slice(n - 1);
  return [...sorted.slice(0, n - 1), { label: `${others.length} ${rest}`, value: others.reduce((a, x) => a + x.value, 0) }];
};

/** Refused: a figure the node would not give, and its reason. */
interface Refused {
  refused: string;
}

/** refusable: the query's answer, or the node's refusal of it (the rest of the view is still shown). */
const refusable = <T>(p: Promise<T>): Promise<T | Refused> => p.catch((e: unknown) => ({ refused: errorText(e) }));

const isRefused = (x: unknown): x is Refused => typeof x === "object" && x !== null && "refused" in x;

const toDate = (t?: { seconds: bigint; nanos: number }) => (t && t.seconds > 0n ? new Date(Number(t.seconds) * 1000) : undefined);

export class NetworkView extends View {
  static properties = { ...View.properties, data: { state: true } };
  declare data: NetworkData | undefined;

  protected async load(): Promise<void> {
    const q = this.chain.q;
    const [power, nodeCounts, classes, regions, era, pool, emissions, pending, recentTasks] = await Promise.all([
      q.gfl.NetworkPower({}),
      // nodes by status: counted on the chain's status index (every node, read as keys)
      refusable(
        Promise.all(
          nodeStatuses.map(async (s) => {
            const r = await q.gfl.NodesByStatus({ status: s, pagination: page(1, { countTotal: true }) });
            return { status: s, label: nodeStatus(s), value: Number(r.pagination?.total ?? 0n) };
          }),
        ),
      ),
      // the schedulable nodes by class and region: the chain's counts, a key each
      refusable(
        all(async (p) => {
          const r = await q.market.SchedulableByClass({ pagination: p });
          return { items: r.classes, nextKey: r.pagination?.nextKey };
        }),
      ),
      refusable(
        all(async (p) => {
          const r = await q.market.SchedulableByRegion({ pagination: p });
          return { items: r.regions, nextKey: r.pagination?.nextKey };
        }, regionsRead),
      ),
      q.dps.Era({}),
      q.dps.Pool({}),
      q.dps.Emissions({ pagination: page(100, { reverse: true }) }),
      // the scheduler queue's counts (one record): not a scan of the tasks the chain keeps
      refusable(q.market.Queue({})),
      // the newest tasks, for the time to assignment: each says when it last became
      // pending and when it was assigned (the jobs, each with its spec of up to about
      // 670 KB, are not read)
      refusable(q.market.Tasks({ status: marketTypes.TaskStatus.TASK_STATUS_UNSPECIFIED, pagination: page(200, { reverse: true }) })),
    ]);
    // the chain's counts (one record, however many jobs it holds)
    const jobs = await refusable(
      q.market.JobCounts({}).then(({ counts: c }) =>
        (
          [
            [marketTypes.JobStatus.JOB_STATUS_BIDDING, c?.bidding],
            [marketTypes.JobStatus.JOB_STATUS_ACTIVE, c?.active],
            [marketTypes.JobStatus.JOB_STATUS_COMPLETED, c?.completed],
            [marketTypes.JobStatus.JOB_STATUS_FAILED, c?.failed],
            [marketTypes.JobStatus.JOB_STATUS_CANCELLED, c?.cancelled],
          ] as const
        ).map(([s, n]) => ({ label: jobStatus(s), value: Number(n ?? 0n) })),
      ),
    );
    // Time to assignment, in blocks, over the newest tasks that were assigned (from when
    // each last became pending: its submission, or its node's giving it back).
    const waits = (isRefused(recentTasks) ? [] : recentTasks.tasks)
      .filter((t) => t.pendingHeight > 0n && t.assignedHeight >= t.pendingHeight)
      .map((t) => Number(t.assignedHeight - t.pendingHeight))
      .sort((a, b) => a - b);
    const dists = [...emissions.distributions].sort((a, b) => Number(a.epoch - b.epoch));
    this.data = {
      totalGflops: power.power?.totalGflops ?? 0n,
      activeNodes: power.power?.nodes ?? 0n,
      byWorkload: (power.power?.byWorkload ?? []).map((w) => ({ label: workload(w.workload), value: Number(w.gflops) })),
      byClass: isRefused(classes)
        ? classes
        : byCount(classes.map((c) => ({ label: c.gpuClass, value: Number(c.idle + c.loaded) }))),
      byRegion: isRefused(regions)
        ? regions
        : topBars(
            regions.map((r) => ({ label: r.region || "no region", value: Number(r.nodes) })),
            regionBars,
            "other regions",
          ),
      regionsCut: !isRefused(regions) && regions.length >= regionsRead,
      byStatus: isRefused(nodeCounts) ? nodeCounts : nodeCounts.map(({ label, value }) => ({ label, value })),
      jobs,
      pendingTasks: isRefused(pending) ? pending : Number(pending.waiting + pending.parked),
      recentRefused: isRefused(recentTasks) ? recentTasks : undefined,
      assignBlocks: waits.length
        ? { median: waits[Math.floor(waits.length / 2)], max: waits[waits.length - 1], n: waits.length }
        : undefined,
      epochs: dists.map((d) => Number(d.epoch)),
      gflByEpoch: [{ label: "verified GFLOP/s (10^6 = 1 GFL)", values: dists.map((d) => Number(d.totalGfl)) }],
      emissionByEpoch: [
        { label: "emission (DPS)", values: dists.map((d) => Number(BigInt(d.emission || "0")) / 1e6) },
        { label: "availability (DPS)", values: dists.map((d) => Number(BigInt(d.paidAvailability || "0")) / 1e6) },
        { label: "work (DPS)", values: dists.map((d) => Number(BigInt(d.paidWork || "0")) / 1e6) },
      ],
      era: era.era,
      rate: era.rate,
      nextHalving: toDate(era.nextHalvingTime),
      lastHalving: toDate(era.lastHalvingTime),
      pool: pool.balance?.amount ?? "0",
      owed: pool.owed,
    };
  }

  render() {
    const d = this.data;
    return html`<section aria-labelledby="network-h">
      <h2 id="network-h">Network</h2>
      ${this.state()}
      ${d
        ? html`<div class="cards">
              <div class="card"><h3>GFL index</h3><p class="big" data-testid="gfl-index">${gfl(d.totalGflops)}</p>
                <p class="muted">${d.totalGflops.toString()} GFLOP/s verified on ${d.activeNodes.toString()} nodes</p></div>
              <div class="card"><h3>Queue</h3><p class="big" data-testid="pending-tasks">${isRefused(d.pendingTasks) ? "—" : d.pendingTasks}</p>
                ${isRefused(d.pendingTasks) ? this.refusal("pending-refused", "count the tasks waiting", d.pendingTasks, "a node from before the market's store version 15 walks the queue, which a flood takes past its gas limit") : ""}
                <p class="muted">tasks waiting for a node${d.assignBlocks
                  ? html`; assigned after ${d.assignBlocks.median} blocks (median), ${d.assignBlocks.max} at most, over ${d.assignBlocks.n} recent tasks`
                  : ""}</p>
                ${d.recentRefused ? this.refusal("recent-refused", "read the recent tasks (for the time to assignment)", d.recentRefused, "a page of 200 tasks reads about a million gas at most: the node's query gas limit may be set lower") : ""}</div>
              <div class="card"><h3>Reward pool</h3><p class="big">${dps(d.pool)}</p><p class="muted">${dps(d.owed)} owed to providers</p></div>
              <div class="card"><h3>Emission era</h3><p class="big">${d.era}</p>
                <p class="muted">rate ${dec(d.rate, 2)} DPS per GFL${d.nextHalving ? html`; next halving by ${d.nextHalving.toISOString().slice(0, 10)}` : ""}${d.lastHalving
                  ? html`; last ${d.lastHalving.toISOString().slice(0, 10)}`
                  : ""}</p>
                ${d.lastHalving && d.nextHalving ? this.halvingBar(d.lastHalving, d.nextHalving) : ""}</div>
            </div>
            <div class="charts">
              <flops-line-chart label="GFL index by epoch" x-label="epoch" .x=${d.epochs} .series=${d.gflByEpoch}></flops-line-chart>
              <flops-line-chart label="Emission per epoch" x-label="epoch" .x=${d.epochs} .series=${d.emissionByEpoch}></flops-line-chart>
              ${this.bars("Schedulable nodes by GPU class", d.byClass, "classes-refused", "count the schedulable nodes by class", "a node from before the schedulable counts does not serve them")}
              ${this.bars(`Schedulable nodes by region${d.regionsCut ? ` (of the first ${regionsRead.toLocaleString("en-US")} regions by name)` : ""}`, d.byRegion,
                "regions-refused", "count the schedulable nodes by region", "a node from before the schedulable counts does not serve them")}
              ${this.bars("Nodes by status", d.byStatus, "nodes-refused", "count the nodes")}
              ${this.bars("Jobs by status", d.jobs, "jobs-refused", "count the jobs", "a node from before the job counts does not serve them")}
              <flops-bars label="Verified GFLOP/s by workload" .items=${d.byWorkload}></flops-bars>
            </div>`
        : ""}
    </section>`;
  }

  /** bars is a bar chart of items, or under its label the node's refusal to give them (refusal's arguments). */
  private bars(label: string, items: { label: string; value: number }[] | Refused, testId: string, what: string, why?: string) {
    return isRefused(items)
      ? html`<figure><figcaption>${label}</figcaption>${this.refusal(testId, what, items, why)}</figure>`
      : html`<flops-bars label=${label} .items=${items}></flops-bars>`;
  }

  /** refusal says that the node would not give a figure, and why (why: what may have caused it). */
  private refusal(testId: string, what: string, r: Refused, why = "a big chain's query can pass the node's gas limit") {
    return html`<p class="muted" data-testid=${testId}>The node would not ${what} (${why}): ${r.refused}</p>`;
  }

  private halvingBar(last: Date, next: Date) {
    const now = Date.now();
    const pct = Math.max(0, Math.min(100, (100 * (now - last.getTime())) / (next.getTime() - last.getTime())));
    return html`<progress max="100" value=${pct} aria-label="time to the next halving">${pct.toFixed(0)}%</progress>`;
  }
}
customElements.define("flops-network-view", NetworkView);

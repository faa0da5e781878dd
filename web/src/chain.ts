// The node connection: typed query clients, a signing client once a wallet is connected, and
// live updates. New blocks are found by polling the height every second; a failing node is
// retried with exponential backoff (1 s doubling to 30 s) and the views show the error.
import { GasPrice, type SigningStargateClient } from "@cosmjs/stargate";
import type { Comet38Client } from "@cosmjs/tendermint-rpc";
import { connectQuery, connectSigning, gflQuery, type FlopsQueryClients } from "@flopsnet/client";

import type { Config } from "./config.js";
import type { Wallet } from "./wallet.js";

export interface ChainStatus {
  height: number;
  /** the last error talking to the node, cleared by the next success */
  error?: string;
  /** when the next poll runs after an error, ms since the epoch */
  retryAt?: number;
}

export class Chain extends EventTarget {
  readonly config: Config;
  q!: FlopsQueryClients;
  signing?: SigningStargateClient;
  wallet?: Wallet;
  status: ChainStatus = { height: 0 };
  private timer?: ReturnType<typeof setTimeout>;
  private failures = 0;

  constructor(config: Config) {
    super();
    this.config = config;
  }

  /** start connects and polls for blocks until stop(); it never throws (errors go to status). */
  async start(): Promise<void> {
    await this.poll();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.q?.disconnect();
  }

  private async poll(): Promise<void> {
    let delay = 1000;
    try {
      if (!this.q) this.q = await connectQuery(this.config.rpc);
      const height = await this.q.stargate.getHeight();
      this.failures = 0;
      const changed = height !== this.status.height || this.status.error !== undefined;
      this.status = { height };
      if (changed) this.dispatchEvent(new Event("block"));
    } catch (e) {
      this.failures++;
      delay = Math.min(30_000, 1000 * 2 ** Math.min(this.failures - 1, 5));
      this.status = { height: this.status.height, error: errorText(e), retryAt: Date.now() + delay };
      this.dispatchEvent(new Event("block"));
    }
    this.timer = setTimeout(() => void this.poll(), delay);
  }

  async connectWallet(wallet: Wallet): Promise<void> {
    this.signing?.disconnect();
    this.signing = await connectSigning(this.config.rpc, wallet.signer, {
      gasPrice: GasPrice.fromString(this.config.gasPrice),
    });
    this.wallet = wallet;
    this.dispatchEvent(new Event("wallet"));
  }

  disconnectWallet(): void {
    this.signing?.disconnect();
    this.signing = undefined;
    this.wallet = undefined;
    this.dispatchEvent(new Event("wallet"));
  }
}

/** errorText turns what the node or CosmJS threw into one line for a person: the chain's
 * message without gRPC wrapping or errorsmod's source locations. */
export function errorText(e: unknown): string {
  let s = e instanceof Error ? e.message : String(e);
  s = s.replace(/\s*\[[^\]]*\.go:\d+\]/g, "");
  s = s.replace(/^.*?rpc error: code = \w+ desc = /, "");
  s = s.replace(/^failed to execute message; message index: \d+: /, "");
  s = s.replace(/ with gas used: '\d+'/, "");
  s = s.replace(/: unknown request$/, "");
  return s.trim();
}

/** Payment: one EventTaskSettled paid to a provider. */
export interface Payment {
  height: number;
  taskId: bigint;
  jobId: bigint;
  paid: bigint;
}

const unquote = (v: string) => (v.startsWith('"') ? (JSON.parse(v) as string) : v);

type Attrs = Record<string, string>;

// The flops events the views read from block results; a committed block's events never
// change, so each block's are fetched once.
const WATCHED = new Set(["flops.market.v1.EventTaskSettled", "flops.dps.v1.EventDistributionQueued"]);
const blockEventCache = new Map<number, { type: string; attrs: Attrs }[]>();

async function blockEvents(comet: Comet38Client, height: number) {
  let evs = blockEventCache.get(height);
  if (!evs) {
    const r = await comet.blockResults(height);
    evs = r.finalizeBlockEvents
      .filter((e) => WATCHED.has(e.type))
      .map((e) => ({ type: e.type, attrs: Object.fromEntries(e.attributes.map((x) => [x.key, unquote(x.value)])) as Attrs }));
    blockEventCache.set(height, evs);
  }
  return evs;
}

/** paymentsTo finds the settlements paid to a provider in the chain's event index (block
 * events, where the block hooks settle tasks, and tx events): the newest `max` blocks. */
export async function paymentsTo(comet: Comet38Client, provider: string, max = 100): Promise<Payment[]> {
  const query = `flops.market.v1.EventTaskSettled.provider CONTAINS '${provider}'`;
  const [blocks, txs] = await Promise.all([
    comet.blockSearch({ query, order_by: "desc", per_page: max }),
    comet.txSearch({ query, order_by: "desc", per_page: max }),
  ]);
  const found: { height: number; type: string; attrs: Attrs }[] = [];
  for (const b of blocks.blocks) {
    const height = b.block.header.height;
    for (const e of await blockEvents(comet, height)) found.push({ height, ...e });
  }
  for (const t of txs.txs) {
    for (const e of t.result.events) {
      found.push({ height: t.height, type: e.type, attrs: Object.fromEntries(e.attributes.map((x) => [x.key, unquote(x.value)])) });
    }
  }
  return found
    .filter((e) => e.type === "flops.market.v1.EventTaskSettled" && e.attrs.provider === provider)
    .map((e) => ({ height: e.height, taskId: BigInt(e.attrs.task_id ?? 0), jobId: BigInt(e.attrs.job_id ?? 0), paid: BigInt(e.attrs.paid ?? 0) }))
    .sort((x, y) => x.height - y.height);
}

/** powerHistory reads a node's verified power at `points` heights spread over the last
 * `span` blocks, from the node's historical state (ABCI queries at a height; a height the
 * node has pruned, or before the node existed, is left out). */
export async function powerHistory(comet: Comet38Client, nodeId: bigint, latest: number, points = 16, span = 2000) {
  const first = Math.max(1, latest - span);
  const step = Math.max(1, Math.floor((latest - first) / (points - 1)));
  const heights: number[] = [];
  for (let h = latest; h >= first && heights.length < points; h -= step) heights.unshift(h);
  const data = gflQuery.QueryNodePowerRequest.encode({ nodeId }).finish();
  const out = await Promise.all(
    heights.map(async (height) => {
      try {
        const r = await comet.abciQuery({ path: "/flops.gfl.v1.Query/NodePower", data, height });
        if (r.code !== 0) return undefined;
        return { height, gflops: Number(gflQuery.QueryNodePowerResponse.decode(r.value).powerGflops) };
      } catch {
        return undefined;
      }
    }),
  );
  return out.filter((x): x is { height: number; gflops: number } => x !== undefined);
}

/** EpochEnd: the block where a reward epoch ended (x/dps queued its distribution there); the
 * block belongs to the next epoch, whose BeginBlock ended this one. */
export interface EpochEnd {
  height: number;
  epoch: number;
}

/** epochEnds finds the newest `max` reward-epoch ends in the event index
 * (EventDistributionQueued), oldest first. */
export async function epochEnds(comet: Comet38Client, max = 100): Promise<EpochEnd[]> {
  const found = await comet.blockSearch({ query: "flops.dps.v1.EventDistributionQueued.epoch EXISTS", order_by: "desc", per_page: max });
  const ends: EpochEnd[] = [];
  for (const b of found.blocks) {
    const height = b.block.header.height;
    for (const e of await blockEvents(comet, height)) {
      if (e.type === "flops.dps.v1.EventDistributionQueued") ends.push({ height, epoch: Number(e.attrs.epoch) });
    }
  }
  return ends.sort((x, y) => x.height - y.height);
}

/** epochOf says which reward epoch a block belongs to: the one after the last epoch that
 * ended at or before it; undefined before the oldest end known (unless that is epoch 1's). */
export function epochOf(height: number, ends: EpochEnd[]): number | undefined {
  let e: number | undefined;
  for (const end of ends) {
    if (end.height > height) break;
    e = end.epoch + 1;
  }
  if (e === undefined && ends.length > 0 && ends[0].epoch === 1) return 1;
  return e;
}

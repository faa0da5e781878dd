// One pool (continuous inference): its budget and escrow, units open and claimed, members
// and what each earned; its owner posts units and closes it.
import { html } from "lit";
import { sha256 } from "@cosmjs/crypto";
import { toHex, toUtf8 } from "@cosmjs/encoding";
import { marketTx, marketTypes } from "@flopsnet/client";

import { dps, short } from "../format.js";
import { page } from "../page.js";
import { send } from "../tx.js";
import { View } from "../view.js";

const strip = (s: string, p: string) => (s.startsWith(p) ? s.slice(p.length) : s);
const poolStatus = (s: marketTypes.PoolStatus) => strip(marketTypes.poolStatusToJSON(s), "POOL_STATUS_");
const unitStatus = (s: marketTypes.UnitStatus) => strip(marketTypes.unitStatusToJSON(s), "UNIT_STATUS_");

interface Member {
  nodeId: bigint;
  provider: string;
  earnings: string;
  units: bigint;
}

/** unitsFromText reads one unit per line: a URI and its content's sha256 (64 hex), or a URI
 * and the content itself after " = " (hashed here). */
export function unitsFromText(text: string): marketTypes.Input[] {
  const units: marketTypes.Input[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const eq = /^(\S+)\s+=\s+(.*)$/.exec(line);
    const pair = /^(\S+)\s+([0-9a-f]{64})$/.exec(line);
    if (eq) units.push({ uri: eq[1], sha256: toHex(sha256(toUtf8(eq[2]))), path: "" });
    else if (pair) units.push({ uri: pair[1], sha256: pair[2], path: "" });
    else throw new Error(`units line ${i + 1}: "${line}": a URI and a sha256 (64 lowercase hex), or a URI, " = " and the content`);
  });
  if (units.length === 0) throw new Error("units: none given");
  return units;
}

export class PoolView extends View {
  static properties = {
    ...View.properties,
    poolId: { attribute: "pool-id" },
    pool: { state: true },
    units: { state: true },
    members: { state: true },
    unitsText: { state: true },
  };
  declare poolId: string;
  declare pool: marketTypes.Pool | undefined;
  declare units: marketTypes.Unit[];
  declare members: Member[];
  declare unitsText: string;

  constructor() {
    super();
    this.units = [];
    this.members = [];
    this.unitsText = "https://example.com/batches/1 = prompt batch 1\nhttps://example.com/batches/2 = prompt batch 2";
  }

  // Another pool in the same element: start over.
  protected willUpdate(changed: Map<string, unknown>): void {
    if (changed.has("poolId") && changed.get("poolId") !== undefined) {
      this.pool = undefined;
      this.units = [];
      this.members = [];
      this.loading = true;
      void this.reload();
    }
  }

  protected async load(): Promise<void> {
    const id = BigInt(this.poolId);
    const q = this.chain.q.market;
    const [pool, units, members] = await Promise.all([
      q.Pool({ poolId: id, omitSpec: false }),
      q.OpenUnits({ poolId: id, pagination: page(500) }),
      q.PoolMembers({ poolId: id, pagination: page(200) }),
    ]);
    this.pool = pool.pool;
    this.units = units.units;
    this.members = await Promise.all(
      members.members.map(async (m) => {
        const e = await q.PoolEarnings({ poolId: id, provider: m.provider });
        return { nodeId: m.nodeId, provider: m.provider, earnings: e.earnings, units: e.units };
      }),
    );
  }

  private act(what: "units" | "close") {
    const owner = this.chain.wallet!.address;
    return this.action(async () => {
      if (what === "units") {
        const units = unitsFromText(this.unitsText);
        const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgSubmitUnits", value: { owner, poolId: this.pool!.id, units } }]);
        const { firstUnit } = marketTx.MsgSubmitUnitsResponse.decode(res.msgResponses[0].value);
        return `${units.length} unit(s) posted in block ${res.height}, from unit ${firstUnit}.`;
      }
      const res = await send(this.chain, [{ typeUrl: "/flops.market.v1.MsgClosePool", value: { owner, poolId: this.pool!.id } }]);
      const { refunded } = marketTx.MsgClosePoolResponse.decode(res.msgResponses[0].value);
      return `Closed in block ${res.height}; ${dps(refunded)} refunded.`;
    });
  }

  render() {
    const p = this.pool;
    const owner = p && this.chain.wallet?.address === p.owner;
    const open = p?.status === marketTypes.PoolStatus.POOL_STATUS_OPEN;
    return html`<section aria-labelledby="pool-h">
      <h2 id="pool-h">Pool #${this.poolId}</h2>
      ${this.state()}
      ${p
        ? html`<div class="cards">
              <div class="card"><h3>Status</h3><p class="big" data-testid="pool-status">${poolStatus(p.status)}</p><p class="muted">owner ${short(p.owner)}</p></div>
              <div class="card"><h3>Escrow</h3><p class="big">${dps(p.escrow)}</p><p class="muted">of a ${dps(p.spec?.budget?.amount)} budget; ${dps(p.spec?.unitPrice?.amount)} per unit</p></div>
              <div class="card"><h3>Units</h3><p class="big" data-testid="pool-paid">${p.paidUnits} paid</p><p class="muted">${p.openUnits} open of ${p.nextUnit - 1n} posted</p></div>
              <div class="card"><h3>Members</h3><p class="big">${p.members}</p><p class="muted">${dps(p.unpaid)} credited, not yet paid out</p></div>
            </div>
            ${owner && open
              ? html`<form class="job-form" @submit=${(e: Event) => (e.preventDefault(), this.act("units"))}>
                  <div class="field">
                    <label for="f-units">Post units: one per line, a URI and its sha256, or a URI, " = " and the content</label>
                    <textarea id="f-units" rows="4" .value=${this.unitsText} @input=${(e: Event) => (this.unitsText = (e.target as HTMLTextAreaElement).value)}></textarea>
                  </div>
                  <button type="submit" ?disabled=${this.busy}>Post units</button>
                  <button type="button" class="danger" ?disabled=${this.busy} @click=${() => this.act("close")}>Close pool</button>
                </form>`
              : ""}
            ${this.actionState()}
            <h3>Units open or claimed</h3>
            ${this.units.length === 0
              ? html`<p class="muted">None open.</p>`
              : html`<table class="list" aria-label="open units">
                  <thead><tr><th>Unit</th><th>Status</th><th>Claimed by</th><th>Input</th></tr></thead>
                  <tbody>${this.units.map(
                    (u) => html`<tr><td>#${u.id}</td><td>${unitStatus(u.status)}</td>
                      <td>${u.provider ? html`<a href="#/provider/${u.provider}">${short(u.provider)}</a> node #${u.nodeId}` : "—"}</td>
                      <td><code>${u.input?.uri}</code></td></tr>`,
                  )}</tbody>
                </table>`}
            <h3>Members and payouts</h3>
            ${this.members.length === 0
              ? html`<p class="muted">No members yet.</p>`
              : html`<table class="list" aria-label="members">
                  <thead><tr><th>Node</th><th>Provider</th><th>Units paid</th><th>Earned</th></tr></thead>
                  <tbody>${this.members.map(
                    (m) => html`<tr><td>#${m.nodeId}</td><td><a href="#/provider/${m.provider}">${short(m.provider)}</a></td><td>${m.units}</td><td>${dps(m.earnings)}</td></tr>`,
                  )}</tbody>
                </table>`}`
        : ""}
    </section>`;
  }
}
customElements.define("flops-pool-view", PoolView);

// <flops-app>: the shell. Hash routes: #/network (the default), #/client, #/job/<id>,
// #/pool/<id>, #/provider/<address>. One Chain (the node connection and its block poller) is shared by
// every view.
import "uplot/dist/uPlot.min.css";
import "./style.css";
import "./chart.js";
import "./views/client.js";
import "./views/job.js";
import "./views/network.js";
import "./views/pool.js";
import "./views/provider.js";

import { LitElement, html } from "lit";

import { Chain } from "./chain.js";
import { type Config, type Endpoints, loadConfig } from "./config.js";

const NAMES: Record<keyof Endpoints, string> = { chainId: "chain", rpc: "RPC node", rest: "REST gateway" };

// linkedBanner says, on every view, which endpoints the page's link chose instead of the
// site's: a link is anyone's to write, and what the page shows (results it checks, prices,
// balances) and where signed transactions go is that node's word, not the site's.
function linkedBanner(cfg: Config) {
  const linked = Object.keys(cfg.linked) as (keyof Endpoints)[];
  const ignored = Object.keys(cfg.ignored) as (keyof Endpoints)[];
  return html`${linked.length
    ? html`<p class="warning banner" role="alert" data-testid="linked-node">
        This page's link points it at
        ${linked.map(
          (k, i) => html`${i ? (i === linked.length - 1 ? " and " : ", ") : ""}${NAMES[k]} <code>${cfg.linked[k]}</code> (this
            site's: <code>${cfg.site[k]}</code>)`,
        )}. Everything shown comes from there, and transactions you sign are sent there: trust it only if it is
        yours. <a href=${location.pathname + location.hash}>Use this site's node</a>
      </p>`
    : ""}${ignored.length
    ? html`<p class="muted banner" role="status" data-testid="ignored-link">
        This site does not take its node from a link: ${ignored.map((k) => `?${k === "chainId" ? "chain" : k}=`).join(", ")} ignored; the page
        reads from <code>${cfg.rpc}</code>.
      </p>`
    : ""}`;
}

type Route = { view: "network" | "client" | "job" | "pool" | "provider"; arg?: string };

function route(): Route {
  const [, view, arg] = location.hash.replace(/^#/, "").split("/");
  if (view === "client" || view === "job" || view === "pool" || view === "provider") return { view, arg: arg ? decodeURIComponent(arg) : undefined };
  return { view: "network" };
}

export class FlopsApp extends LitElement {
  static properties = { chain: { state: true }, route: { state: true }, tick: { state: true }, fatal: { state: true } };
  declare chain: Chain | undefined;
  declare route: Route;
  declare tick: number;
  declare fatal: string | undefined;

  constructor() {
    super();
    this.route = route();
    this.tick = 0;
    addEventListener("hashchange", () => (this.route = route()));
  }

  protected createRenderRoot() {
    return this;
  }

  async connectedCallback() {
    super.connectedCallback();
    try {
      const chain = new Chain(await loadConfig());
      chain.addEventListener("block", () => this.tick++);
      chain.addEventListener("wallet", () => this.tick++);
      await chain.start();
      this.chain = chain;
    } catch (e) {
      this.fatal = e instanceof Error ? e.message : String(e);
    }
  }

  render() {
    const c = this.chain;
    const s = c?.status;
    const link = (view: Route["view"], label: string) =>
      html`<a href="#/${view}" aria-current=${this.route.view === view ? "page" : "false"}>${label}</a>`;
    return html`<header>
        <h1><a href="#/network">flops</a></h1>
        <nav aria-label="views">${link("client", "Client")} ${link("provider", "Provider")} ${link("network", "Network")}</nav>
        <p class="node-status" role="status" aria-live="polite">
          ${c ? html`${c.config.chainId} · block <span data-testid="height">${s?.height ?? 0}</span>` : "connecting…"}
          ${c?.wallet ? html` · <span title=${c.wallet.address}>${c.wallet.address.slice(0, 12)}…</span>` : ""}
        </p>
      </header>
      ${c ? linkedBanner(c.config) : ""}
      ${s?.error
        ? html`<p class="error banner" role="alert">The node at ${c!.config.rpc} does not answer: ${s.error}. Retrying in
            ${Math.max(0, Math.round(((s.retryAt ?? Date.now()) - Date.now()) / 1000))} s.</p>`
        : ""}
      ${this.fatal ? html`<p class="error banner" role="alert">${this.fatal}</p>` : ""}
      <main>${c ? this.view(c) : html`<p class="loading" role="status">Connecting to the node…</p>`}</main>`;
  }

  private view(c: Chain) {
    const r = this.route;
    switch (r.view) {
      case "client":
        return html`<flops-client-view .chain=${c}></flops-client-view>`;
      case "job":
        return html`<flops-job-view .chain=${c} job-id=${r.arg ?? "0"}></flops-job-view>`;
      case "pool":
        return html`<flops-pool-view .chain=${c} pool-id=${r.arg ?? "0"}></flops-pool-view>`;
      case "provider":
        return html`<flops-provider-view .chain=${c} .address=${r.arg ?? c.wallet?.address ?? ""}></flops-provider-view>`;
      default:
        return html`<flops-network-view .chain=${c}></flops-network-view>`;
    }
  }
}
customElements.define("flops-app", FlopsApp);

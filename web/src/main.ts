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
import { loadConfig } from "./config.js";

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

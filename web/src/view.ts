// The base of every view: it renders in the light DOM (one style sheet for the page),
// reloads its data on each new block (one load at a time; a block that arrives during a load
// triggers one more), and keeps loading and error states for the template.
import { LitElement, html, type PropertyValues, type TemplateResult } from "lit";

import { errorText, type Chain } from "./chain.js";

export abstract class View extends LitElement {
  static properties = {
    chain: { attribute: false },
    loading: { state: true },
    error: { state: true },
    busy: { state: true },
    actionError: { state: true },
    actionResult: { state: true },
  };
  declare chain: Chain;
  declare loading: boolean;
  declare error: string | undefined;
  /** an action (a signed tx) is in flight */
  declare busy: boolean;
  declare actionError: string | undefined;
  declare actionResult: string | undefined;
  private inFlight = false;
  private again = false;
  private onBlock = () => void this.reload();

  constructor() {
    super();
    this.loading = true;
    this.error = undefined;
    this.busy = false;
  }

  protected createRenderRoot() {
    return this;
  }

  connectedCallback(): void {
    super.connectedCallback();
    this.chain?.addEventListener("block", this.onBlock);
    this.chain?.addEventListener("wallet", this.onBlock);
  }

  disconnectedCallback(): void {
    super.disconnectedCallback();
    this.chain?.removeEventListener("block", this.onBlock);
    this.chain?.removeEventListener("wallet", this.onBlock);
  }

  protected firstUpdated(_: PropertyValues): void {
    void this.reload();
  }

  /** load fetches the view's data from the chain. */
  protected abstract load(): Promise<void>;

  async reload(): Promise<void> {
    if (!this.chain?.q) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = true;
    try {
      await this.load();
      this.error = undefined;
    } catch (e) {
      this.error = errorText(e);
    } finally {
      this.loading = false;
      this.inFlight = false;
    }
    if (this.again) {
      this.again = false;
      void this.reload();
    }
  }

  /** action runs one user action (it signs and sends a tx), one at a time: its message or
   * its error is shown by actionState(), and the view reloads after it. */
  protected async action(run: () => Promise<string>): Promise<void> {
    this.actionError = undefined;
    this.actionResult = undefined;
    this.busy = true;
    try {
      this.actionResult = await run();
      void this.reload();
    } catch (e) {
      this.actionError = e instanceof Error ? e.message : String(e);
    } finally {
      this.busy = false;
    }
  }

  protected actionState(): TemplateResult {
    return html`${this.actionError ? html`<p class="error" role="alert">${this.actionError}</p>` : ""}
    ${this.actionResult ? html`<p class="ok" role="status">${this.actionResult}</p>` : ""}`;
  }

  /** state renders the loading and error lines above a view's content. */
  protected state(): TemplateResult {
    return html`${this.loading ? html`<p class="loading" role="status">Loading…</p>` : ""}
    ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : ""}`;
  }
}

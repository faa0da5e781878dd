// <flops-line-chart>: a time series drawn by uPlot, for what changes over time (the GFL
// index, emission per epoch, a node's power and reputation). <flops-bars>: labelled
// horizontal bars for counts by category.
import { LitElement, html, type PropertyValues } from "lit";
import uPlot from "uplot";

export interface Series {
  label: string;
  values: (number | null)[];
}

export class LineChart extends LitElement {
  static properties = {
    label: {},
    xLabel: { attribute: "x-label" },
    x: { attribute: false },
    series: { attribute: false },
  };
  declare label: string;
  declare xLabel: string;
  declare x: number[];
  declare series: Series[];
  private plot?: uPlot;
  private observer?: ResizeObserver;

  constructor() {
    super();
    this.label = "";
    this.xLabel = "";
    this.x = [];
    this.series = [];
  }

  protected createRenderRoot() {
    return this;
  }

  render() {
    return html`<figure role="img" aria-label=${this.label}>
      <figcaption>${this.label}</figcaption>
      <div class="plot"></div>
      ${this.x.length === 0 ? html`<p class="muted">No data yet.</p>` : ""}
    </figure>`;
  }

  protected updated(_: PropertyValues): void {
    const el = this.querySelector<HTMLDivElement>(".plot");
    if (!el) return;
    const data = [this.x, ...this.series.map((s) => s.values)] as uPlot.AlignedData;
    const width = Math.max(240, el.clientWidth || this.clientWidth || 320);
    if (this.plot && this.plot.series.length === this.series.length + 1) {
      this.plot.setData(data);
      return;
    }
    this.plot?.destroy();
    const colors = ["#2563eb", "#16a34a", "#db2777", "#ea580c"];
    this.plot = new uPlot(
      {
        width,
        height: 180,
        scales: { x: { time: false } },
        // x is an epoch or a block height: whole numbers only
        axes: [{ label: this.xLabel, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000] }, {}],
        series: [{ label: this.xLabel }, ...this.series.map((s, i) => ({ label: s.label, stroke: colors[i % colors.length], width: 2 }))],
      },
      data,
      el,
    );
    this.observer?.disconnect();
    this.observer = new ResizeObserver(() => this.plot?.setSize({ width: Math.max(240, el.clientWidth), height: 180 }));
    this.observer.observe(el);
  }

  disconnectedCallback(): void {
    super.disconnectedCallback();
    this.observer?.disconnect();
    this.plot?.destroy();
    this.plot = undefined;
  }
}

export class Bars extends LitElement {
  static properties = { label: {}, items: { attribute: false } };
  declare label: string;
  declare items: { label: string; value: number }[];

  constructor() {
    super();
    this.label = "";
    this.items = [];
  }

  protected createRenderRoot() {
    return this;
  }

  render() {
    const max = Math.max(1, ...this.items.map((i) => i.value));
    return html`<figure>
      <figcaption>${this.label}</figcaption>
      ${this.items.length === 0 ? html`<p class="muted">None.</p>` : ""}
      <ul class="bars" aria-label=${this.label}>
        ${this.items.map(
          (i) => html`<li>
            <span class="bar-label">${i.label}</span>
            <span class="bar" style="width:${(100 * i.value) / max}%"></span>
            <span class="bar-value">${i.value}</span>
          </li>`,
        )}
      </ul>
    </figure>`;
  }
}

customElements.define("flops-line-chart", LineChart);
customElements.define("flops-bars", Bars);

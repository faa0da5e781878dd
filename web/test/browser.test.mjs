// The dashboard in headless Chromium (Debian's, driven by playwright-core) against a running
// localnet with workers, as the demo leaves it. A client submits a job from the form and
// sees it settle at the price the chain charged; a bad spec shows the field's error and
// sends nothing; the provider view shows the node, its verified power and the payment; the
// network view's GFL is the chain's, and the figures a big chain's node refuses to read
// (its query gas limit) leave the rest of that view; a link that points the page at
// another node is said so and never reaches the wallet. Screenshots of the views go to $OUT.
//
//   WEB_URL  the dashboard (its config.json names the node and a funded test mnemonic)
//   RPC      the node's CometBFT RPC, for the chain's side of each check
//   OUT      where the screenshots and timings go (default test-results/)
//   CHROMIUM the browser (default /usr/bin/chromium)
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";
import { toBech32 } from "@cosmjs/encoding";
import { Comet38Client } from "@cosmjs/tendermint-rpc";
import { connectQuery, gflQuery, marketQuery, marketTypes } from "@flopsnet/client";

const WEB_URL = process.env.WEB_URL ?? "http://127.0.0.1:8080/";
const RPC = process.env.RPC ?? "http://127.0.0.1:26657";
const OUT = process.env.OUT ?? "test-results";
mkdirSync(OUT, { recursive: true });

let browser, page, q;
const timings = {};
const consoleErrors = [];

const dps = (udps) => {
  const v = BigInt(udps);
  const frac = (v % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${(v / 1_000_000n).toLocaleString("en-US")}${frac ? "." + frac : ""} DPS`;
};

before(async () => {
  q = await connectQuery(RPC);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
});

after(async () => {
  writeFileSync(`${OUT}/timings.json`, JSON.stringify(timings, null, 2) + "\n");
  await browser?.close();
  q?.disconnect();
});

/** pasteSpec opens the client view's "Paste a spec" tab and fills in yaml. */
// waits until a page shows the chain's GFL index. The index moves at each epoch's end, so a
// view read just before one and a chain read just after differ for a moment: each try reads
// the chain again, and the view (which refreshes) has to agree with one of the reads.
async function showsChainGfl(pg) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { power } = await q.gfl.NetworkPower({});
    const want = dps(power.totalGflops).replace(" DPS", " GFL"); // both have 6 decimals
    const got = await pg.getByTestId("gfl-index").textContent();
    if (got === want) return power;
    if (Date.now() > deadline) assert.equal(got, want, "the view shows the chain's GFL index");
    await new Promise((r) => setTimeout(r, 250));
  }
}

// playNode plays the node to a page: each of its ABCI queries goes to answer(path, data
// as hex), which returns undefined to let the node answer, or a function that gets the
// node's response and returns the one the page sees (a refusal, a rewritten value).
async function playNode(pg, answer) {
  await pg.route(
    (url) => url.pathname === "/" || url.pathname === "",
    closedQuietly(pg, async (route) => {
      const body = route.request().postDataJSON?.();
      if (route.request().method() !== "POST" || body?.method !== "abci_query") return route.continue();
      const edit = answer(body.params?.path, body.params?.data ?? "");
      if (!edit) return route.continue();
      const res = await route.fetch();
      const json = await res.json();
      json.result.response = edit(json.result.response);
      return route.fulfill({ response: res, json });
    }),
  );
}

// closedQuietly is a route handler that ends quietly when its page closed under it: the
// views poll every second, and a poll in flight when a test closes its page would find
// its response disposed ("Response has been disposed"), an unhandled rejection after the
// test that fails the run.
const closedQuietly = (pg, handle) => async (route) => {
  try {
    return await handle(route);
  } catch (e) {
    // closing, not yet closed: a response disposed under the handler while close() runs
    if (!pg.isClosed() && !closing.has(pg)) throw e;
  }
};

// closing holds the pages closePlayed is closing.
const closing = new WeakSet();

// closePlayed closes a page whose requests a route handler plays: the handlers still in
// flight (the views poll every second, and the network view sends a dozen queries a
// refresh) end quietly from the moment the close begins, not only once it is done.
async function closePlayed(pg) {
  closing.add(pg);
  await pg.unrouteAll({ behavior: "ignoreErrors" });
  await pg.close();
}

// refusal is the node's refusal of a query: its ABCI code and log, no value.
const refusal = (code, log) => (response) => ({ ...response, code, codespace: "sdk", log, value: null });

// waits until a bar chart shows each [label, count] of want (a list, or a function that
// reads it from the chain again at each try: a node may stop or start being schedulable
// between a read of the chain and the view's), and no other bar.
async function barsShow(pg, label, want) {
  const bars = pg.getByRole("list", { name: label, exact: true });
  await bars.waitFor({ timeout: 15_000 });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const wanted = (typeof want === "function" ? await want() : want).map(([l, n]) => [l, String(n)]).sort();
    assert.ok(wanted.length > 0, `${label}: the chain counts some`);
    const got = (
      await bars.locator("li").evaluateAll((lis) =>
        lis.map((li) => [li.querySelector(".bar-label")?.textContent, li.querySelector(".bar-value")?.textContent]),
      )
    ).sort();
    if (JSON.stringify(got) === JSON.stringify(wanted)) return;
    if (Date.now() > deadline) assert.deepEqual(got, wanted, `${label}: the chain's counts`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// the chain's schedulable nodes by class and by region, as the charts label them
const chainClasses = async () => (await q.market.SchedulableByClass({})).classes.map((c) => [c.gpuClass, c.idle + c.loaded]);
const chainRegions = async () => (await q.market.SchedulableByRegion({})).regions.map((r) => [r.region || "no region", r.nodes]);

async function pasteSpec(yaml) {
  await page.goto(`${WEB_URL}#/client`);
  await page.getByRole("tab", { name: "Paste a spec" }).click();
  await page.getByLabel(/Job spec/).fill(yaml);
}

/** submitPasted submits the form and returns the new job's id (the page goes to the job's
 * view); a refusal fails with the page's error. */
async function submitPasted() {
  await page.getByRole("button", { name: "Submit job" }).click();
  await Promise.race([
    page.waitForURL(/#\/job\/\d+$/, { timeout: 30_000 }),
    page.getByTestId("form-error").waitFor({ timeout: 30_000 }).then(async () => {
      throw new Error(`the page refused the pasted spec: ${await page.getByTestId("form-error").textContent()}`);
    }),
  ]);
  return BigInt(page.url().split("/").pop());
}

test("the network view shows the chain's GFL index", async () => {
  const t0 = Date.now();
  await page.goto(`${WEB_URL}#/network`);
  const gfl = page.getByTestId("gfl-index");
  await gfl.waitFor({ timeout: 30_000 });
  timings.firstRenderMs = Date.now() - t0;
  const power = await showsChainGfl(page);
  assert.ok(power.totalGflops > 0n, "the localnet has verified power");
  await page.getByText("Jobs by status").waitFor();
  // the queue: the scheduler's count (Queue), as the chain gives it
  const { waiting, parked } = await q.market.Queue({});
  await page.waitForFunction(
    (w) => document.querySelector('[data-testid="pending-tasks"]')?.textContent === w,
    String(waiting + parked),
    { timeout: 15_000 },
  );
  // the schedulable nodes by class and region: the chain's counts
  await barsShow(page, "Schedulable nodes by GPU class", chainClasses);
  await barsShow(page, "Schedulable nodes by region", chainRegions);
  // the demo's tasks were assigned: the time to assignment, from the newest tasks
  await page.getByText(/assigned after \d+ blocks \(median\), \d+ at most, over [1-9]\d* recent tasks/).waitFor({ timeout: 15_000 });
  const { counts } = await q.market.JobCounts({});
  assert.ok(counts.completed > 0n, "the demo's jobs completed");
  await page.screenshot({ path: `${OUT}/network.png`, fullPage: true });
});

let owner;
let jobId;

test("a bad spec shows the field's error and sends nothing", async () => {
  await page.goto(`${WEB_URL}#/client`);
  await page.getByRole("button", { name: "Use the local test key" }).click();
  owner = (await page.getByTestId("address").textContent()).trim();
  const before = await q.market.JobsByOwner({ owner, pagination: undefined });
  // parsed in the page: not a number
  await page.getByLabel("Tasks", { exact: true }).fill("four");
  await page.getByRole("button", { name: "Submit job" }).click();
  await page.locator(".field.invalid").getByText(/task_count: "four": a whole number/).waitFor();
  // valid to read, refused by the chain's own validation (the simulation): 0 tasks
  await page.getByLabel("Tasks", { exact: true }).fill("0");
  await page.getByRole("button", { name: "Submit job" }).click();
  const err = page.locator(".field.invalid .field-error");
  await err.waitFor({ timeout: 15_000 });
  assert.match(await err.textContent(), /^task_count 0: must be 1 to \d+/);
  assert.equal(await page.locator(".field.invalid input").getAttribute("name"), "task_count");
  // a deadline in the past, refused on its field
  await page.getByLabel("Tasks", { exact: true }).fill("1");
  await page.getByLabel("Deadline").fill("2020-01-01T00:00");
  await page.getByRole("button", { name: "Submit job" }).click();
  await page.locator(".field.invalid .field-error").getByText(/^deadline/).waitFor({ timeout: 15_000 });
  const afterJobs = await q.market.JobsByOwner({ owner, pagination: undefined });
  assert.equal(afterJobs.jobs.length, before.jobs.length, "no job was created");
});

test("a client submits a job from the form and sees it settle at the chain's price", async () => {
  const deadline = new Date(Date.now() + 3600_000).toISOString().slice(0, 16);
  await page.getByLabel("Deadline").fill(deadline);
  await page.getByLabel("Max price per task (DPS)").fill("3");
  await page.getByLabel("Tasks", { exact: true }).fill("1");
  assert.equal(await page.getByTestId("escrow").textContent(), "3 DPS");
  const t0 = Date.now();
  await page.getByRole("button", { name: "Submit job" }).click();
  await page.waitForURL(/#\/job\/\d+$/, { timeout: 30_000 });
  jobId = BigInt(page.url().split("/").pop());
  const status = page.getByTestId("task-status").first();
  await page.waitForFunction(() => document.querySelector('[data-testid="task-status"]')?.textContent === "SETTLED", null, {
    timeout: 240_000,
    polling: 500,
  });
  timings.submitToSettledMs = Date.now() - t0;
  assert.equal(await status.textContent(), "SETTLED");
  const { tasks } = await q.market.TasksByJob({ jobId, pagination: undefined });
  assert.equal(tasks.length, 1);
  assert.equal(tasks[0].status, marketTypes.TaskStatus.TASK_STATUS_SETTLED);
  assert.equal(await page.getByTestId("task-price").first().textContent(), dps(tasks[0].price));
  await page.waitForFunction(() => document.querySelector('[data-testid="job-status"]')?.textContent === "COMPLETED", null, { timeout: 30_000 });
  // the outputs, fetched from the provider with the owner's ADR-036 signature and checked
  // against the result root on chain
  await page.getByRole("button", { name: "Outputs" }).first().click();
  const verdict = page.getByTestId("outputs-verdict");
  await verdict.waitFor({ timeout: 30_000 });
  const root = Buffer.from(tasks[0].resultRoot).toString("hex");
  assert.match(
    await verdict.textContent(),
    new RegExp(`^\\s*Verified: 1 file\\(s\\) match the manifest, and the PoCP root of product\\.i32le, recomputed here, is the result root committed on chain \\(${root.slice(0, 12)}`),
  );
  assert.match(await page.locator("ul.files").textContent(), /✓ product\.i32le/);
  await page.screenshot({ path: `${OUT}/client.png`, fullPage: true });
});

test("the owner ends its output sessions: a session key that leaked is refused, the next read is delegated anew", async () => {
  // the job's page, whose outputs were read under a session key in the test before
  await page.goto(`${WEB_URL}#/job/${jobId}`);
  const reads = [];
  const onRequest = (req) => {
    if (/\/v1\/tasks\/\d+\/outputs$/.test(new URL(req.url()).pathname)) reads.push({ url: req.url(), headers: req.headers() });
  };
  page.on("request", onRequest);
  const readOutputs = async () => {
    const before = reads.length;
    await page.getByRole("button", { name: "Outputs" }).first().click();
    for (const end = Date.now() + 30_000; reads.length === before; await new Promise((r) => setTimeout(r, 100))) {
      assert.ok(Date.now() < end, "the page read the outputs again");
    }
    await page.getByText("Fetching the outputs from the provider…").waitFor({ state: "detached", timeout: 30_000 });
    assert.match(await page.getByTestId("outputs-verdict").textContent(), /^\s*Verified:/);
  };
  await readOutputs();
  assert.equal(reads.length, 1);
  // what a thief holding the session's headers sends (the session's key signed them)
  const replay = async () => {
    const headers = Object.fromEntries(Object.entries(reads[0].headers).filter(([k]) => k.startsWith("x-flops-")));
    const res = await fetch(reads[0].url, { headers });
    return { status: res.status, error: (await res.json()).error };
  };
  let r = await replay();
  assert.equal(r.status, 401);
  assert.match(r.error, /was used before/, "before the revocation only the spent nonce stops it");

  await page.getByRole("button", { name: "End output sessions" }).click();
  await page.getByText(/^Sessions ended at 1 provider\(s\): the session keys this wallet delegated before .* UTC are refused there/).waitFor({ timeout: 30_000 });
  r = await replay();
  assert.equal(r.status, 401);
  assert.match(r.error, /issued at \d+, before flops1\w+ ended its sessions here/, "the provider refuses the revoked delegation itself");

  await readOutputs();
  page.off("request", onRequest);
  assert.equal(reads.length, 2);
  assert.notEqual(reads[1].headers["x-flops-delegation"], reads[0].headers["x-flops-delegation"], "a new session, delegated after the revocation");
});

test("a pasted spec no node can take waits, and the client cancels it for a full refund", async () => {
  const deadline = new Date(Date.now() + 3600_000).toISOString();
  await pasteSpec(`# no node is in this region
workload: WORKLOAD_CLASS_BATCH
runtime: RUNTIME_BUILTIN
image: gemm
builtin: {gemm_n: 256, gemm_r: 1}
requirements: {gpu_count: 1, region: nowhere}
task_count: 2
replicas: 1
verification: VERIFICATION_CLASS_BUILTIN_GEMM
max_price_per_task: 1500000udps
priority_tip: 0udps
verification_budget: 0udps
max_duration: 10m
deadline: "${deadline}"
mode: ALLOCATION_MODE_ASSIGN
`);
  assert.equal(await page.getByTestId("escrow").textContent(), "3 DPS");
  const id = await submitPasted();
  await page.getByRole("button", { name: "Cancel job" }).click();
  await page.getByText(/^Cancelled in block \d+; 3 DPS refunded\.$/).waitFor({ timeout: 30_000 });
  await page.waitForFunction(() => document.querySelector('[data-testid="job-status"]')?.textContent === "CANCELLED", null, { timeout: 15_000 });
  const { job } = await q.market.Job({ jobId: id });
  assert.equal(job.status, marketTypes.JobStatus.JOB_STATUS_CANCELLED);
});

test("a running PROCESS task's log is followed live, signed by the owner", { skip: process.env.PROCESS_JOBS !== "true" && "no node takes PROCESS jobs (bubblewrap is not installed)" }, async () => {
  const deadline = new Date(Date.now() + 3600_000).toISOString();
  await pasteSpec(`workload: WORKLOAD_CLASS_BATCH
runtime: RUNTIME_PROCESS
command:
  - sh
  - -c
  - 'for i in 1 2 3 4 5 6 7 8; do echo "line $i"; sleep 1; done; echo done > "$FLOPS_OUTPUT_DIR/result.txt"'
requirements: {gpu_count: 1}
task_count: 1
replicas: 1
verification: VERIFICATION_CLASS_NONE
max_price_per_task: 1000000udps
priority_tip: 0udps
verification_budget: 0udps
max_duration: 300s
deadline: "${deadline}"
mode: ALLOCATION_MODE_ASSIGN
`);
  await submitPasted();
  await page.waitForFunction(() => document.querySelector('[data-testid="task-status"]')?.textContent === "RUNNING", null, { timeout: 60_000, polling: 250 });
  // every read of the log is signed by a session key under one delegation the wallet
  // signed (a wallet like Keplr would otherwise prompt every 2 s)
  const logReads = [];
  const onRequest = (req) => {
    if (req.url().includes("/logs/stdout")) logReads.push(req.headers());
  };
  page.on("request", onRequest);
  await page.getByRole("button", { name: "Logs" }).first().click();
  const log = page.getByTestId("task-log");
  await page.getByRole("heading", { name: "stdout (live)" }).waitFor({ timeout: 15_000 });
  await page.waitForFunction(() => /line 8/.test(document.querySelector('[data-testid="task-log"]')?.textContent ?? ""), null, { timeout: 60_000, polling: 250 });
  assert.match(await log.textContent(), /^line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n/);
  await page.getByRole("heading", { name: "stdout", exact: true }).waitFor({ timeout: 15_000 }); // the run ended: no longer live
  page.off("request", onRequest);
  assert.ok(logReads.length >= 2, `the log was read more than once (${logReads.length})`);
  assert.equal(new Set(logReads.map((h) => h["x-flops-delegation"])).size, 1, "one delegation for every read");
  assert.ok(logReads.every((h) => h["x-flops-delegation"] && h["x-flops-sign-mode"] === "raw" && h["x-flops-delegation-sign-mode"] === "adr036"));
  assert.equal(new Set(logReads.map((h) => h["x-flops-nonce"])).size, logReads.length, "a nonce a read");
});

test("a client opens a pool, posts units, and watches members claim and get paid", async () => {
  await page.goto(`${WEB_URL}#/client`);
  await page.getByRole("button", { name: "Open pool" }).click(); // examples/pool.yaml, prefilled
  await page.waitForURL(/#\/pool\/\d+$/, { timeout: 30_000 });
  const poolId = BigInt(page.url().split("/").pop());
  await page.getByRole("button", { name: "Post units" }).click(); // two units, hashed in the page
  await page.getByText(/2 unit\(s\) posted in block \d+/).waitFor({ timeout: 30_000 });
  await page.waitForFunction(() => document.querySelector('[data-testid="pool-paid"]')?.textContent === "2 paid", null, {
    timeout: 180_000,
    polling: 500,
  });
  const { pool } = await q.market.Pool({ poolId });
  assert.equal(pool.paidUnits, 2n);
  const members = page.getByRole("table", { name: "members" });
  await members.waitFor();
  const { members: onChain } = await q.market.PoolMembers({ poolId, pagination: undefined });
  let earned = 0n;
  for (const m of onChain) earned += BigInt((await q.market.PoolEarnings({ poolId, provider: m.provider })).earnings);
  assert.equal(earned, 2n * BigInt(pool.spec.unitPrice.amount), "two units' price credited to the members");
  await page.screenshot({ path: `${OUT}/pool.png`, fullPage: true });
  await page.getByRole("button", { name: "Close pool" }).click();
  await page.waitForFunction(() => document.querySelector('[data-testid="pool-status"]')?.textContent === "CLOSED", null, { timeout: 30_000 });
});

test("the provider view shows the node, its verified power and the payment", async () => {
  const { tasks } = await q.market.TasksByJob({ jobId, pagination: undefined });
  const t = tasks[0];
  await page.goto(`${WEB_URL}#/provider/${t.provider}`);
  const node = page.locator(`[data-testid="node"][aria-label="node ${t.nodeId}"]`);
  await node.waitFor({ timeout: 30_000 });
  // The node's power is re-measured as the demo runs (its PoCP samples) and the view
  // reloads at every block, so the page and a query may each have a different block's
  // value at one moment: they must agree within a few blocks (a page that shows a wrong
  // value never does).
  const formatted = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} PFLOP/s` : n >= 1e3 ? `${(n / 1e3).toFixed(2)} TFLOP/s` : `${n} GFLOP/s`);
  let shown, want;
  for (const until = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 500))) {
    shown = await node.getByTestId("node-power").textContent();
    const power = (await q.gfl.NodePower({ nodeId: t.nodeId })).powerGflops;
    assert.ok(power > 0n);
    want = formatted(Number(power));
    if (shown === want || Date.now() > until) break;
  }
  assert.equal(shown, want);
  // the disk the node offers a task per GPU, as its spec says (the demo's first node
  // offers 2 GiB, the others none)
  const { node: registered } = await q.gfl.Node({ nodeId: t.nodeId });
  assert.equal(
    await node.getByTestId("node-disk").textContent(),
    registered.diskMibPerGpu > 0n ? `${registered.diskMibPerGpu / 1024n} GiB disk offered per GPU` : "no disk offered beyond the market's default",
  );
  // the node's ask beside its class's cap in the last reward distribution (x/dps, "Priced
  // out"), as the chain has them: a new distribution may end between the page's read and
  // the test's
  const ask = registered.askPerGpuHour.amount;
  let askShown, askWant;
  for (const until = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 500))) {
    askShown = await node.getByTestId("node-ask").textContent();
    const latest = await q.dps.LatestEmission({});
    const c = latest.found ? latest.distribution.askCaps.find((x) => x.gpuClass === registered.gpuClass) : undefined;
    askWant = !c
      ? `Ask ${dps(ask)} per GPU-hour`
      : BigInt(ask) > BigInt(c.cap)
        ? `Ask ${dps(ask)} per GPU-hour: above its class's cap of ${dps(c.cap)} (epoch ${latest.distribution.epoch}), so it earns no availability reward`
        : `Ask ${dps(ask)} per GPU-hour, within its class's cap of ${dps(c.cap)} (epoch ${latest.distribution.epoch})`;
    if (askShown === askWant || Date.now() > until) break;
  }
  assert.equal(askShown, askWant);
  const payments = await page.getByTestId("payments").textContent();
  assert.notEqual(payments, "0 DPS", "the task's payment shows in the provider's earnings");
  // earnings per epoch: every payment is in an epoch's row, and the task's is in the epoch
  // its settlement block belongs to (the one after the last epoch x/dps queued before it)
  await page.getByText("Earnings per epoch as a table").click();
  const rows = await page.getByTestId("epoch-earnings").evaluateAll((trs) =>
    trs.map((tr) => ({ epoch: Number(tr.dataset.epoch), payments: BigInt(tr.dataset.payments) })),
  );
  assert.equal(dps(rows.reduce((a, r) => a + r.payments, 0n)), payments);
  const comet = await Comet38Client.connect(RPC);
  const ends = await comet.blockSearchAll({ query: `flops.dps.v1.EventDistributionQueued.epoch EXISTS AND block.height <= ${t.settleHeight}` });
  const last = Math.max(...ends.blocks.map((b) => b.block.header.height));
  const ended = (await comet.blockResults(last)).finalizeBlockEvents.find((e) => e.type === "flops.dps.v1.EventDistributionQueued");
  const epoch = Number(JSON.parse(ended.attributes.find((a) => a.key === "epoch").value)) + 1;
  comet.disconnect();
  assert.ok((rows.find((r) => r.epoch === epoch)?.payments ?? 0n) > 0n, `epoch ${epoch} holds the payment settled in block ${t.settleHeight}`);
  await page.screenshot({ path: `${OUT}/provider.png`, fullPage: true });
});

test("the job view says what became of each failure report", async () => {
  // A failing job is not part of the demo's run: the node's answer for the submitted job's
  // tasks is played with a report of each status added to its first task (the chain's own
  // outcomes are tests/integration's; here, what the owner reads of them).
  const statuses = [
    [marketTypes.FailureStatus.FAILURE_STATUS_CONFIRMED, /confirmed by another operator's run/],
    [marketTypes.FailureStatus.FAILURE_STATUS_REFUTED, /refuted: .* the reporter was slashed/],
    [marketTypes.FailureStatus.FAILURE_STATUS_UNDECIDED, /undecided: no other operator's node could take the task; nobody paid or slashed/],
    [marketTypes.FailureStatus.FAILURE_STATUS_UNCONFIRMED, /unconfirmed: .*abandoned task \(its reruns were slashed 1 DPS: the most it loses unconfirmed\)$/, "1000000"],
  ];
  const played = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  await playNode(played, (path) => {
    if (path !== "/flops.market.v1.Query/TasksByJob") return undefined;
    return (response) => {
      const res = marketQuery.QueryTasksByJobResponse.decode(Buffer.from(response.value, "base64"));
      if (res.tasks.length === 0) return response;
      res.tasks[0].failures = statuses.map(([status, , rerunSlashed], i) =>
        marketTypes.FailureReport.fromPartial({ provider: res.tasks[0].provider, nodeId: BigInt(70 + i), reason: marketTypes.FailureReason.FAILURE_REASON_EXIT,
          exitCode: 2, detail: "exit status 2", status, price: "0", exposure: "0", paid: "0", rerunSlashed: rerunSlashed ?? "0" }));
      return { ...response, value: Buffer.from(marketQuery.QueryTasksByJobResponse.encode(res).finish()).toString("base64") };
    };
  });
  await played.goto(`${WEB_URL}#/job/${jobId}`);
  const reports = played.getByTestId("task-failure");
  await reports.first().waitFor({ timeout: 30_000 });
  const shown = await reports.allTextContents();
  assert.equal(shown.length, statuses.length);
  statuses.forEach(([, want], i) => {
    assert.match(shown[i], new RegExp(`^failure reported by node #${70 + i} \\(EXIT, exit code 2\\): `));
    assert.match(shown[i], want);
  });
  await closePlayed(played);
});

test("a node that does not answer is said so, and retried with backoff", async () => {
  // a page of its own: its refused connections are the point, not console errors
  const dead = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  await dead.goto(`${WEB_URL}?rpc=http://127.0.0.1:9#/network`);
  const banner = dead.getByRole("alert").filter({ hasText: "does not answer" });
  await banner.waitFor({ timeout: 15_000 });
  assert.match(await banner.textContent(), /The node at http:\/\/127\.0\.0\.1:9 does not answer: .+ Retrying in\s+\d+ s\./);
  await dead.close();
});

// fakeKeplr puts a wallet at window.keplr that records the chains a page suggests and
// enables, and holds address (it signs nothing). Like Keplr, it enables only a chain it
// was suggested.
async function fakeKeplr(pg, address) {
  await pg.addInitScript((addr) => {
    window.__keplr = { suggested: [], enabled: [] };
    window.keplr = {
      experimentalSuggestChain: async (info) => void window.__keplr.suggested.push(JSON.parse(JSON.stringify(info))),
      enable: async (id) => {
        if (!window.__keplr.suggested.some((info) => info.chainId === id)) throw new Error(`There is no chain info for ${id}`);
        window.__keplr.enabled.push(id);
      },
      getOfflineSignerAuto: async () => ({
        getAccounts: async () => [{ address: addr, algo: "secp256k1", pubkey: new Uint8Array(33).fill(2) }],
        signDirect: async () => {
          throw new Error("the test's wallet signs nothing");
        },
      }),
      signArbitrary: async () => {
        throw new Error("the test's wallet signs nothing");
      },
    };
  }, address);
}

test("a phishing link that points the page at another node is said so, and never reaches the wallet", async () => {
  // A link is anyone's to write: ?rpc= and ?rest= naming its maker's node would show that
  // node's made-up chain under the site's name and send what the user signs there. Here the
  // linked node is the site's own under another name, so the page works as it would.
  const site = await (await fetch(new URL("config.json", WEB_URL))).json();
  const other = (u) => u.replace("127.0.0.1", "localhost");
  const pg = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  const address = toBech32("flops", new Uint8Array(20).fill(7));
  await fakeKeplr(pg, address);
  await pg.goto(`${WEB_URL}?rpc=${encodeURIComponent(other(site.rpc))}&rest=${encodeURIComponent(other(site.rest))}#/client`);
  const banner = pg.getByTestId("linked-node");
  await banner.waitFor({ timeout: 15_000 });
  const text = (await banner.textContent()).replace(/\s+/g, " ");
  assert.ok(text.includes(`RPC node ${other(site.rpc)} (this site's: ${site.rpc})`), text);
  assert.ok(text.includes(`REST gateway ${other(site.rest)} (this site's: ${site.rest})`), text);
  assert.match(text, /transactions you sign are sent there/);
  // its long addresses wrap on a phone
  await pg.setViewportSize({ width: 390, height: 844 });
  const overflow = await pg.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `the banner scrolls the page sideways by ${overflow}px at 390px`);
  await pg.screenshot({ path: `${OUT}/linked-node-phone.png` });
  await pg.setViewportSize({ width: 1366, height: 768 });
  await pg.waitForFunction(() => Number(document.querySelector('[data-testid="height"]')?.textContent) > 0, null, { timeout: 15_000 });

  // the wallet is offered the site's chain with the site's endpoints, never the link's
  await pg.getByRole("button", { name: "Connect Keplr" }).click();
  await pg.getByText(address.slice(0, 12)).first().waitFor({ timeout: 15_000 });
  const { suggested, enabled } = await pg.evaluate(() => window.__keplr);
  assert.deepEqual(enabled, [site.chainId]);
  assert.ok(suggested.length > 0, "the site's chain is suggested");
  for (const info of suggested) {
    assert.equal(info.chainId, site.chainId);
    assert.equal(info.rpc, site.rpc, "the wallet gets the site's RPC, not the link's");
    assert.equal(info.rest, site.rest, "the wallet gets the site's REST, not the link's");
  }

  // one click back to the site's own node
  await banner.getByRole("link", { name: "Use this site's node" }).click();
  await pg.waitForURL((u) => u.search === "" && u.hash === "#/client");
  await pg.waitForFunction(() => Number(document.querySelector('[data-testid="height"]')?.textContent) > 0, null, { timeout: 15_000 });
  assert.equal(await pg.getByTestId("linked-node").count(), 0);

  // a chain the link names is not added to the wallet: Keplr, which does not know it,
  // enables nothing, and the page says why
  await pg.goto(`${WEB_URL}?chain=evil-1#/client`);
  await pg.getByTestId("linked-node").filter({ hasText: `chain evil-1 (this site's: ${site.chainId})` }).waitFor({ timeout: 15_000 });
  await pg.getByRole("button", { name: "Connect Keplr" }).click();
  await pg
    .getByRole("alert")
    .filter({ hasText: `Keplr did not enable evil-1, the chain this page's link names (There is no chain info for evil-1): this site adds only its own chain, ${site.chainId}, to a wallet` })
    .waitFor({ timeout: 15_000 });
  assert.deepEqual(await pg.evaluate(() => window.__keplr), { suggested: [], enabled: [] }, "nothing suggested, nothing enabled");

  // a link whose node is not a web address stops the page, naming it
  await pg.goto(`${WEB_URL}?rpc=javascript:alert(1)#/network`);
  await pg.getByRole("alert").filter({ hasText: "not an http or https URL" }).waitFor({ timeout: 15_000 });
  await pg.close();
});

test("a site that takes no node from links reads its own and says the link's is ignored", async () => {
  const site = await (await fetch(new URL("config.json", WEB_URL))).json();
  const pg = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  await pg.route(
    /\/config\.json$/,
    closedQuietly(pg, async (route) => {
      const res = await route.fetch();
      return route.fulfill({ response: res, json: { ...(await res.json()), urlOverrides: false } });
    }),
  );
  await pg.goto(`${WEB_URL}?rpc=http://127.0.0.1:9&chain=evil-1#/network`);
  const note = pg.getByTestId("ignored-link");
  await note.waitFor({ timeout: 15_000 });
  assert.match((await note.textContent()).replace(/\s+/g, " "), new RegExp(`\\?chain=, \\?rpc= ignored; the page reads from ${site.rpc.replace(/\./g, "\\.")}`));
  await pg.waitForFunction(() => Number(document.querySelector('[data-testid="height"]')?.textContent) > 0, null, { timeout: 15_000 });
  assert.match(await pg.getByRole("status").first().textContent(), new RegExp(site.chainId));
  assert.equal(await pg.getByTestId("linked-node").count(), 0);
  assert.equal(await pg.getByRole("alert").filter({ hasText: "does not answer" }).count(), 0);
  await pg.close();
});

test("the page runs only the scripts it ships (its Content-Security-Policy)", async () => {
  // a page of its own: the refusals are reported on its console
  const pg = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  await pg.goto(`${WEB_URL}#/network`);
  await pg.waitForFunction(() => Number(document.querySelector('[data-testid="height"]')?.textContent) > 0, null, { timeout: 15_000 });
  const ran = await pg.evaluate(() => {
    // markup that ever reached the page from a string of the chain's or a provider's
    const s = document.createElement("script");
    s.textContent = "window.__injected = true";
    document.body.append(s);
    const img = document.createElement("img");
    img.setAttribute("onerror", "window.__handler = true");
    img.src = "data:,";
    document.body.append(img);
    return new Promise((resolve) => setTimeout(() => resolve({ inline: window.__injected === true, handler: window.__handler === true }), 200));
  });
  assert.deepEqual(ran, { inline: false, handler: false }, "an inline script and an event handler attribute are refused");
  await pg.close();
});

test("a figure the node refuses to read leaves the rest of the network view", async () => {
  // The node stops a query that reads more than its gas limit (flopsd's query-gas-limit):
  // no figure reads a whole table, but the scheduler's queue in a flood of jobs can, and
  // the newest tasks are refused here too. Its answer is played on the real node's
  // responses: ABCI code 111222, as tests/integration
  // TestWholeTableScanStopsAtQueryGasLimit has the node give it. The job counts are one
  // record (JobCounts), and the schedulable nodes by region a key a region
  // (SchedulableByRegion), which a node from before store versions 9 and 12 does not
  // serve: its answer, an unknown query path, is played too.
  const refused = new Set(["/flops.market.v1.Query/Queue", "/flops.market.v1.Query/Tasks"]);
  const unknown = new Set(["/flops.market.v1.Query/JobCounts", "/flops.market.v1.Query/SchedulableByRegion"]);
  const big = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  let refusals = 0;
  await playNode(big, (path) => {
    if (!refused.has(path) && !unknown.has(path)) return undefined;
    refusals++;
    return unknown.has(path) ? refusal(6, "unknown query path: unknown request") : refusal(111222, "{ValuePerByte}: panic");
  });
  await big.goto(`${WEB_URL}#/network`);
  await big.getByTestId("gfl-index").waitFor({ timeout: 30_000 });
  await showsChainGfl(big); // the rest of the view is the chain's
  assert.equal(await big.getByTestId("pending-tasks").textContent(), "—");
  assert.match(await big.getByTestId("pending-refused").textContent(), /The node would not count the tasks waiting .*Query failed with \(111222\): \{ValuePerByte\}: panic/);
  assert.match(await big.getByTestId("jobs-refused").textContent(), /The node would not count the jobs \(a node from before the job counts does not serve them\): Query failed with \(6\): unknown query path/);
  assert.match(await big.getByTestId("regions-refused").textContent(), /The node would not count the schedulable nodes by region \(a node from before the schedulable counts does not serve them\): Query failed with \(6\): unknown query path/);
  await barsShow(big, "Schedulable nodes by GPU class", chainClasses);
  assert.match(await big.getByTestId("recent-refused").textContent(), /The node would not read the recent tasks \(for the time to assignment\) .*Query failed with \(111222\)/);
  assert.equal(await big.getByRole("alert").count(), 0, "no error for the view as a whole");
  assert.ok(refusals >= 4, `the node's refusals were played (${refusals})`);
  await big.screenshot({ path: `${OUT}/network-refused.png`, fullPage: true });
  // the view refreshes itself: a route still fetching when the page closes would reject
  // after the test ("Request context disposed") and fail the file
  await closePlayed(big);

  // a node that will not count the nodes by status (each count reads the status index's
  // keys): the status chart says so, and the class chart, the market's counts, is shown;
  // and a network of 14 regions (the answer rewritten): the region chart shows the 11
  // with the most nodes and the other 3 as one bar
  const regions = Array.from({ length: 14 }, (_, i) => ({ region: `r${String(i).padStart(2, "0")}`, nodes: BigInt(14 - i) }));
  const blind = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  let countRefusals = 0;
  await playNode(blind, (path, data) => {
    if (path === "/flops.market.v1.Query/SchedulableByRegion") {
      const value = marketQuery.QuerySchedulableByRegionResponse.encode(marketQuery.QuerySchedulableByRegionResponse.fromPartial({ regions })).finish();
      return (r) => ({ ...r, value: Buffer.from(value).toString("base64") });
    }
    if (path !== "/flops.gfl.v1.Query/NodesByStatus" || !gflQuery.QueryNodesByStatusRequest.decode(Buffer.from(data, "hex")).pagination?.countTotal) return undefined;
    countRefusals++;
    return refusal(111222, "{ValuePerByte}: panic");
  });
  await blind.goto(`${WEB_URL}#/network`);
  await blind.getByTestId("nodes-refused").waitFor({ timeout: 30_000 });
  assert.match(await blind.getByTestId("nodes-refused").textContent(), /The node would not count the nodes \(.+\): Query failed with \(111222\)/);
  await showsChainGfl(blind);
  await barsShow(blind, "Schedulable nodes by GPU class", chainClasses);
  await barsShow(blind, "Schedulable nodes by region", [...regions.slice(0, 11).map((r) => [r.region, r.nodes]), ["3 other regions", 6n]]);
  assert.equal(await blind.getByRole("alert").count(), 0, "no error for the view as a whole");
  assert.ok(countRefusals >= 1, `the node's refusals were played (${countRefusals})`);
  await closePlayed(blind);
});

test("the owner challenges a verified result: its bond is locked and a dispute opens", async () => {
  const deadline = new Date(Date.now() + 3600_000).toISOString();
  await pasteSpec(`workload: WORKLOAD_CLASS_BATCH
runtime: RUNTIME_BUILTIN
image: gemm
builtin: {gemm_n: 256, gemm_r: 1}
requirements: {gpu_count: 1}
task_count: 1
replicas: 1
verification: VERIFICATION_CLASS_BUILTIN_GEMM
max_price_per_task: 1500000udps
priority_tip: 0udps
# a challenge's committee (3 members) is paid from it
verification_budget: 4500000udps
max_duration: 10m
deadline: "${deadline}"
mode: ALLOCATION_MODE_ASSIGN
`);
  const id = await submitPasted();
  const { job } = await q.market.Job({ jobId: id });
  const { params } = await q.market.Params({});
  // the button shows while the result is in its challenge window (the demo runs this test
  // with a 12-block window)
  const challenge = page.getByRole("button", { name: "Challenge" });
  await challenge.waitFor({ timeout: 120_000 });
  await challenge.click();
  const done = page.getByText(/^Task \d+ challenged in block \d+: dispute \d+\.$/);
  await Promise.race([
    done.waitFor({ timeout: 30_000 }),
    page.locator("p.error").waitFor({ timeout: 30_000 }).then(async () => {
      throw new Error(`the challenge was refused: ${await page.locator("p.error").textContent()}`);
    }),
  ]);
  const [, taskId, height, disputeId] = (await done.textContent()).match(/^Task (\d+) challenged in block (\d+): dispute (\d+)\.$/);
  const { task } = await q.market.Task({ taskId: BigInt(taskId) });
  assert.equal(task.jobId, id);
  assert.equal(task.disputeId, BigInt(disputeId));
  const { dispute } = await q.market.Dispute({ disputeId: BigInt(disputeId) });
  assert.equal(dispute.kind, marketTypes.DisputeKind.DISPUTE_KIND_CHALLENGE);
  assert.equal(dispute.challenger, job.owner);
  assert.equal(dispute.bond, params.challengeBond.amount);
  // the bond left the owner's balance in the challenge's tx (read from its block's results:
  // a balance difference could catch another job's refund)
  const { results } = await q.comet.blockResults(Number(height));
  const spent = results.flatMap((r) => r.events).filter((e) => e.type === "coin_spent").map((e) => Object.fromEntries(e.attributes.map((a) => [a.key, a.value])));
  assert.ok(
    spent.some((a) => a.spender === job.owner && a.amount === `${params.challengeBond.amount}${params.challengeBond.denom}`),
    `the owner paid the ${params.challengeBond.amount}${params.challengeBond.denom} bond in block ${height}: ${JSON.stringify(spent)}`,
  );
  // the task row says so, and offers no second challenge
  await page.getByTestId("task-dispute").filter({ hasText: `dispute #${disputeId}: ` }).waitFor({ timeout: 15_000 });
  assert.match(
    await page.getByTestId("task-dispute").first().textContent(),
    new RegExp(`^dispute #${disputeId}: (OPEN|UPHELD|OVERTURNED|INCONCLUSIVE|EXPIRED), challenged \\(bond ${dps(params.challengeBond.amount).replace(".", "\\.")}\\); committee of \\d+$`),
  );
  assert.equal(await challenge.count(), 0, "a disputed result cannot be challenged again");
  await page.screenshot({ path: `${OUT}/challenge.png`, fullPage: true });
});

test("the views fit a phone's width", async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  const { tasks } = await q.market.TasksByJob({ jobId, pagination: undefined });
  const views = [
    ["network", "#/network", page.getByTestId("gfl-index")],
    ["client", "#/client", page.getByTestId("balance")],
    ["job", `#/job/${jobId}`, page.getByTestId("task-status").first()],
    ["provider", `#/provider/${tasks[0].provider}`, page.getByTestId("node").first()],
  ];
  for (const [name, hash, ready] of views) {
    await page.goto(`${WEB_URL}${hash}`);
    if (name === "client") {
      // the same document keeps its wallet across hash changes; a fresh one asks again
      const key = page.getByRole("button", { name: "Use the local test key" });
      await ready.or(key).first().waitFor({ timeout: 30_000 });
      if (await key.isVisible()) await key.click();
    }
    await ready.waitFor({ timeout: 30_000 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `the ${name} view scrolls sideways by ${overflow}px at 390px`);
    await page.screenshot({ path: `${OUT}/${name}-phone.png`, fullPage: true });
  }
  assert.deepEqual(consoleErrors, [], "no errors in the page's console");
});

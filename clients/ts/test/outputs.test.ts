// fetchOutputs against a provider's output server played here, honest and not: the
// manifest is held to the chain's result root before anything is downloaded, files are
// cut off past their size in the manifest, downloads are bounded in number, and the roots
// are the Go worker's (vectors computed by worker/executor.ManifestRoot and
// x/gfl/pocp.BuildTree).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { Secp256k1, Secp256k1Signature, sha256 } from "@cosmjs/crypto";
import { fromBase64, toUtf8 } from "@cosmjs/encoding";

import {
  appendLog, delegateOutputs, DELEGATION_DOMAIN, FAILED_ROOT_HEX, fetchOutputs, LOG_TRIMMED, manifestRoot, MAX_LOG_CHUNK, productRoot, PRODUCT_FILE, readLog, REVOCATION_DOMAIN,
  revokeEverywhere, revokeOutputSessions, utf8Complete, type Manifest, type OutputSigner,
} from "../src/index.js";

const signer: OutputSigner = {
  address: "flops1owner",
  signArbitrary: async () => ({ pubkey: new Uint8Array(33), signature: new Uint8Array(64) }),
};

const hex = (b: string | Uint8Array) => createHash("sha256").update(b).digest("hex");

/** served is what the provider serves: a manifest and each path's body. */
interface Served {
  manifest: Manifest;
  bodies: Map<string, Uint8Array | ((res: ServerResponse) => void)>;
}

function outputsOf(taskId: number, contents: Record<string, string | Uint8Array>, resultRoot?: string): Served {
  const files = Object.entries(contents).map(([path, c]) => ({ path, size: typeof c === "string" ? Buffer.byteLength(c) : c.length, sha256: hex(c) }));
  const root = manifestRoot(files);
  const bodies = new Map<string, Uint8Array | ((res: ServerResponse) => void)>();
  for (const [p, c] of Object.entries(contents)) bodies.set(p, typeof c === "string" ? new TextEncoder().encode(c) : c);
  return { manifest: { task_id: String(taskId), root, result_root: resultRoot ?? root, files, logs: [] }, bodies };
}

/** provider serves what serve() returns, and counts the requests and the most at once. */
async function provider(serve: () => Served) {
  const stats = { manifests: 0, files: 0, inFlight: 0, maxInFlight: 0 };
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    const s = serve();
    const path = decodeURIComponent(new URL(req.url!, "http://x").pathname);
    if (path.endsWith("/outputs")) {
      stats.manifests++;
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify(s.manifest));
      return;
    }
    const [, file] = path.split("/outputs/");
    const body = s.bodies.get(file);
    stats.files++;
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    res.on("close", () => stats.inFlight--);
    if (body === undefined) {
      res.statusCode = 404;
      res.end(JSON.stringify({ error: "not found" }));
    } else if (typeof body === "function") {
      body(res);
    } else {
      setTimeout(() => res.end(body), 5); // long enough for downloads to overlap
    }
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  after(() => srv.close());
  const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return { stats, url: (taskId: number) => `${base}/v1/tasks/${taskId}/outputs`, base };
}

test("manifest and product roots are the Go worker's", () => {
  const files = [
    { path: "model.bin", size: 15, sha256: "4fbd1d6cdfe6f3e4e9fa4c2ad5eb71b8cbc8b0e1b1d7b0f5a8e7c5c5c5c5c5c5" },
    { path: "a b/c%d.txt", size: 3, sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
    { path: "métrics/loss.csv", size: 0, sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
  ];
  assert.equal(manifestRoot(files), "f3f42a171df0a600ee87544b8cc601097e09554329d4c41290e98dad7437d422");
  assert.equal(manifestRoot([]), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(productRoot(product(3)), "a1a7b47ea509a47d480d43d9746960dc4a2a67040c746e54dd50db1f56315253");
});

/** product is a 256 x 256 gemm product: s[i] = seed x (i mod 997 - 498), little-endian. */
function product(seed: number): Uint8Array {
  const s = new Int32Array(256 * 256);
  for (let i = 0; i < s.length; i++) s[i] = seed * ((i % 997) - 498);
  return new Uint8Array(s.buffer);
}

test("the committed files are downloaded and verified", async () => {
  const honest = outputsOf(7, { "model.bin": "trained weights", "loss.csv": "1,0.5\n" });
  const p = await provider(() => honest);
  const c = await fetchOutputs(p.url(7), 7n, signer, honest.manifest.root, false);
  assert.ok(c.downloaded && c.rootOk && c.resultRootOk && c.boundOk);
  assert.deepEqual(c.files.map((f) => [f.path, f.ok, f.body]), [["model.bin", true, undefined], ["loss.csv", true, undefined]]);
  const kept = await fetchOutputs(p.url(7), 7n, signer, honest.manifest.root, false, { keep: (path) => path === "loss.csv" });
  assert.equal(new TextDecoder().decode(kept.files[1].body), "1,0.5\n");
});

// A provider that revealed the right root serves other files under a manifest with the
// chain's root copied into result_root: nothing is downloaded.
test("attack: a provider serves other files under the chain's root", async () => {
  const honest = outputsOf(3, { "model.bin": "trained weights" });
  const fake = outputsOf(3, { "model.bin": "random weights" }, honest.manifest.root);
  const p = await provider(() => fake);
  const c = await fetchOutputs(p.url(3), 3n, signer, honest.manifest.root, false);
  assert.equal(c.resultRootOk, true, "the copied field matches");
  assert.equal(c.boundOk, false);
  assert.equal(c.downloaded, false);
  assert.equal(p.stats.files, 0, "no file was requested");
  assert.match(c.files[0].problem!, /not downloaded: the manifest is not the result committed on chain/);
  assert.equal(c.refused, `its files have the root ${fake.manifest.root}, not the result root revealed on chain ${honest.manifest.root}`);
});

// A provider streams without end under a file the manifest says is small: the read stops
// past the manifest's size, and the caller holds no more than that.
test("attack: a provider streams more than the manifest says", async () => {
  const big = outputsOf(4, { "out.txt": "0123456789" });
  let sent = 0;
  big.bodies.set("out.txt", (res) => {
    const chunk = Buffer.alloc(64 << 10, 120);
    const pump = () => {
      while (!res.destroyed && sent < 512 << 20) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end();
    };
    pump();
  });
  const p = await provider(() => big);
  const c = await fetchOutputs(p.url(4), 4n, signer, big.manifest.root, false);
  assert.equal(c.files[0].ok, false);
  assert.match(c.files[0].problem!, /more than the 10 bytes the manifest says/);
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(sent < 64 << 20, `the provider could send ${sent} bytes before the read was cancelled`);
});

// A manifest of many files is downloaded a few at a time, not all at once.
test("attack: a manifest of many files is downloaded a few at a time", async () => {
  const contents: Record<string, string> = {};
  for (let i = 0; i < 60; i++) contents[`f${i}.txt`] = `file ${i}`;
  const many = outputsOf(5, contents);
  const p = await provider(() => many);
  const c = await fetchOutputs(p.url(5), 5n, signer, many.manifest.root, false);
  assert.ok(c.boundOk && c.files.every((f) => f.ok));
  assert.equal(p.stats.files, 60);
  assert.ok(p.stats.maxInFlight <= 4 && p.stats.maxInFlight >= 2, `${p.stats.maxInFlight} downloads at once`);
});

// A BUILTIN gemm task's result root is its product's PoCP root: another product listed
// under the chain's root is not bound; the right one is.
test("attack: a provider serves another gemm product under the chain's root", async () => {
  const chainRoot = productRoot(product(3));
  const wrong = outputsOf(6, { [PRODUCT_FILE]: product(5) }, chainRoot);
  let serving = wrong;
  const p = await provider(() => serving);
  let c = await fetchOutputs(p.url(6), 6n, signer, chainRoot, true);
  assert.ok(c.files[0].ok, "it matches its manifest");
  assert.equal(c.boundOk, false);
  assert.equal(c.files[0].body, undefined, "the product is not kept unless asked");

  serving = outputsOf(6, { "readme.txt": "elsewhere" }, chainRoot);
  c = await fetchOutputs(p.url(6), 6n, signer, chainRoot, true);
  assert.equal(c.downloaded, false, "no product listed: nothing is downloaded");
  assert.equal(c.refused, `it lists no ${PRODUCT_FILE}, the product whose root is on chain`);

  serving = outputsOf(6, { [PRODUCT_FILE]: product(3) }, chainRoot);
  c = await fetchOutputs(p.url(6), 6n, signer, chainRoot, true);
  assert.ok(c.downloaded && c.boundOk && c.files[0].ok);
});

test("a failed run's files are checked against the manifest only", async () => {
  const left = outputsOf(8, { "partial.txt": "half done" });
  const p = await provider(() => left);
  const c = await fetchOutputs(p.url(8), 8n, signer, FAILED_ROOT_HEX, false);
  assert.ok(c.failedRun && c.downloaded && c.rootOk && c.files.every((f) => f.ok));
  assert.equal(c.boundOk, false, "the failed-run root binds no file");
});

test("what is not a manifest is refused", async () => {
  for (const bad of [{ task_id: "9" }, { task_id: "9", root: "", result_root: "", files: [{ path: 1 }], logs: [] }, "[]"]) {
    const p = await provider(() => ({ manifest: bad as unknown as Manifest, bodies: new Map() }));
    await assert.rejects(fetchOutputs(p.url(9), 9n, signer, FAILED_ROOT_HEX, false), /not a manifest/);
  }
  const other = outputsOf(10, { "a.txt": "a" });
  const p = await provider(() => other);
  await assert.rejects(fetchOutputs(p.url(10), 11n, signer, other.manifest.root, false), /the manifest is for task 10, not 11/);
});

test("readLog reads at most a chunk and never goes back", async () => {
  let header = "-5";
  let body = Buffer.from("hello");
  const srv = createServer((_req, res) => {
    res.setHeader("X-Flops-Log-Offset", header);
    res.setHeader("X-Flops-Task-Running", "true");
    res.end(body);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  after(() => srv.close());
  const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  let r = await readLog(base, 1n, "stdout", 100, signer);
  assert.deepEqual(r, { text: "hello", next: 105, running: true });
  header = "not a number";
  r = await readLog(base, 1n, "stdout", 100, signer);
  assert.equal(r.next, 105);
  header = "130";
  r = await readLog(base, 1n, "stdout", 100, signer);
  assert.equal(r.next, 130);
  body = Buffer.alloc(MAX_LOG_CHUNK + 1, 97);
  await assert.rejects(readLog(base, 1n, "stdout", 0, signer), /more than 1048576 bytes/);
});

test("a character split between two reads of a log is read whole", async () => {
  // tqdm's bar, "█" (3 bytes in UTF-8), flushed by the task mid-character: the first read
  // ends on its first byte, the second starts with the other two
  const log = Buffer.from("epoch 1 ███ 30%\n");
  let cut = 10; // inside the first █ (bytes 8-10)
  let running = true;
  const srv = createServer((req, res) => {
    const offset = Number(new URL(req.url!, "http://x").searchParams.get("offset"));
    const end = running ? cut : log.length;
    res.setHeader("X-Flops-Log-Offset", String(end));
    res.setHeader("X-Flops-Task-Running", String(running));
    res.end(log.subarray(offset, end));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  after(() => srv.close());
  const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  let r = await readLog(base, 1n, "stdout", 0, signer);
  assert.deepEqual(r, { text: "epoch 1 ", next: 8, running: true }, "the cut character is left for the next read");
  let text = r.text;
  cut = 13;
  r = await readLog(base, 1n, "stdout", r.next, signer);
  assert.deepEqual(r, { text: "█", next: 11, running: true });
  text += r.text;
  running = false;
  r = await readLog(base, 1n, "stdout", r.next, signer);
  assert.deepEqual(r, { text: "██ 30%\n", next: log.length, running: false });
  text += r.text;
  assert.equal(text, log.toString());
  assert.ok(!text.includes("\ufffd"));

  // what utf8Complete keeps: every cut of 1-, 2-, 3- and 4-byte characters
  const chars = new TextEncoder().encode("aé█😀");
  for (let n = 0; n <= chars.length; n++) {
    const kept = utf8Complete(chars.subarray(0, n));
    assert.ok(kept <= n && n - kept < 4, `cut at ${n}: kept ${kept}`);
    assert.ok(!new TextDecoder().decode(chars.subarray(0, kept)).includes("\ufffd"), `cut at ${n}`);
  }
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => utf8Complete(chars.subarray(0, n))), [0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10]);
  // a run of stray continuation bytes is not a character to wait for
  assert.equal(utf8Complete(Uint8Array.of(0x80, 0x80, 0x80, 0x80, 0x80)), 5);
});

test("attack: a task that writes without end fills its follower's memory", () => {
  // the dashboard follows a log every 2 s, a chunk (1 MiB) a read: what it keeps is bounded
  let log = "";
  const chunk = "x".repeat(1000) + "\n";
  for (let i = 0; i < 100; i++) log = appendLog(log, chunk, 10_000);
  assert.equal(log.length, LOG_TRIMMED.length + 10_000);
  assert.ok(log.startsWith(LOG_TRIMMED) && log.endsWith(chunk));
  assert.equal(log.indexOf(LOG_TRIMMED, 1), -1, "one marker, however often it was cut");
  assert.equal(appendLog("ab", "cd", 10), "abcd", "nothing dropped within the bound");
  // a cut between the halves of a surrogate pair keeps neither
  const cut = appendLog("a😀", "bc", 3);
  assert.equal(cut, LOG_TRIMMED + "bc");
  assert.equal(appendLog("a😀", "bc", 4), LOG_TRIMMED + "😀bc");
});

/** rawOwner is a job owner whose key (32 bytes of fill) signs raw, as the Go client's
 * does, counting its signatures. */
async function rawOwner(fill: number) {
  const ownerKey = await Secp256k1.makeKeypair(new Uint8Array(32).fill(fill));
  const ownerPub = Secp256k1.compressPubkey(ownerKey.pubkey);
  let n = 0;
  const owner: OutputSigner = {
    address: "flops1owner",
    signMode: "raw",
    async signArbitrary(data) {
      n++;
      const sig = await Secp256k1.createSignature(sha256(data), ownerKey.privkey);
      return { pubkey: ownerPub, signature: new Uint8Array([...sig.r(32), ...sig.s(32)]) };
    },
  };
  return { owner, ownerKey, ownerPub, signatures: () => n };
}

test("a session key signs the owner's requests under one delegation", async () => {
  const { owner, ownerKey, ownerPub, signatures } = await rawOwner(7);
  const seen: Record<string, string | undefined>[] = [];
  const srv = createServer((req, res) => {
    seen.push({ ...req.headers, url: req.url, host: req.headers.host } as unknown as Record<string, string | undefined>);
    res.setHeader("X-Flops-Log-Offset", "3");
    res.end("log");
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  after(() => srv.close());
  const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  const now = Date.UTC(2026, 11, 7);
  const session = await delegateOutputs(owner, base, 3600, now);
  assert.equal(signatures(), 1);
  assert.equal(session.expires, now / 1000 + 3600);
  for (let i = 0; i < 3; i++) await readLog(base, 1n, "stdout", 0, session);
  assert.equal(signatures(), 1, "the owner signed once for three requests");

  for (const h of seen) {
    // the delegation: the owner's signature over the doc that names the session key, this
    // host and the expiry
    const doc = Buffer.from(h["x-flops-delegation"]!, "base64").toString();
    assert.equal(doc, [DELEGATION_DOMAIN, "owner: flops1owner", `key: ${h["x-flops-pubkey"]}`, `host: ${h.host}`, `issued: ${now / 1000}`, `expires: ${now / 1000 + 3600}`].join("\n"));
    assert.equal(h["x-flops-delegation-pubkey"], Buffer.from(ownerPub).toString("base64"));
    assert.equal(h["x-flops-delegation-sign-mode"], "raw");
    const docSig = Secp256k1Signature.fromFixedLength(fromBase64(h["x-flops-delegation-signature"]!));
    assert.ok(await Secp256k1.verifySignature(docSig, sha256(toUtf8(doc)), ownerKey.pubkey));
    // the request: signed raw by the session key, as the owner's address
    assert.equal(h["x-flops-address"], "flops1owner");
    assert.equal(h["x-flops-sign-mode"], "raw");
    const u = new URL(h.url!, base);
    const msg = ["flops-output-v2", "GET", h.host, u.pathname, u.search.slice(1), h["x-flops-timestamp"], h["x-flops-nonce"]].join("\n");
    const sessionPub = Secp256k1.uncompressPubkey(fromBase64(h["x-flops-pubkey"]!));
    const reqSig = Secp256k1Signature.fromFixedLength(fromBase64(h["x-flops-signature"]!));
    assert.ok(await Secp256k1.verifySignature(reqSig, sha256(toUtf8(msg)), sessionPub));
    assert.notDeepEqual(fromBase64(h["x-flops-pubkey"]!), ownerPub, "the session's own key");
  }
  assert.equal(new Set(seen.map((h) => h["x-flops-nonce"])).size, 3, "a nonce a request");
});

test("one signature ends the owner's sessions at every provider", async () => {
  const { owner, ownerKey, ownerPub, signatures } = await rawOwner(9);
  // a provider that holds task 7 (not 6: pruned), and one that refuses everything
  const posted: { url?: string; method?: string; headers: Record<string, string | string[] | undefined> }[] = [];
  const serve = (holds: Set<string>, status?: number) => {
    const srv = createServer((req, res) => {
      posted.push({ url: req.url, method: req.method, headers: req.headers });
      const id = req.url!.split("/")[3];
      res.setHeader("Content-Type", "application/json");
      if (status) {
        res.statusCode = status;
        res.end(JSON.stringify({ error: "cannot look up the owner" }));
      } else if (!holds.has(id)) {
        res.statusCode = 404;
        res.end(JSON.stringify({ error: `task ${id} has no outputs or logs on this machine` }));
      } else {
        const doc = Buffer.from(String(req.headers["x-flops-revocation"]), "base64").toString();
        res.end(JSON.stringify({ owner: "flops1owner", revoked_before: doc.split("before: ")[1] }));
      }
    });
    return new Promise<string>((r) =>
      srv.listen(0, "127.0.0.1", () => {
        after(() => srv.close());
        r(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`);
      }),
    );
  };
  const holder = await serve(new Set(["7"]));
  const broken = await serve(new Set(["7"]), 503);
  const now = Date.UTC(2026, 11, 7, 12);
  const rv = await revokeOutputSessions(owner, now + 300);
  assert.equal(rv.before, now / 1000 + 1, "the next whole second: this second's delegations are ended too");
  const results = await revokeEverywhere(rv, [
    { endpoint: holder, tasks: [6n, 7n] },
    { endpoint: broken + "/", tasks: [7n, 8n] },
  ]);
  assert.equal(signatures(), 1, "one wallet prompt for every provider");
  assert.deepEqual(results[0], { endpoint: holder, task: 7n, before: now / 1000 + 1 });
  assert.equal(results[1].task, undefined);
  assert.match(results[1].error!, /^503 from the provider: cannot look up the owner$/);
  // the holder was asked for task 6, then 7; the broken one once (a 503 says nothing of
  // the task: its next is not tried)
  assert.deepEqual(posted.map((p) => `${p.method} ${p.url}`).sort(), ["POST /v1/tasks/6/revocation", "POST /v1/tasks/7/revocation", "POST /v1/tasks/7/revocation"]);
  for (const p of posted) {
    const doc = Buffer.from(String(p.headers["x-flops-revocation"]), "base64").toString();
    assert.equal(doc, [REVOCATION_DOMAIN, "owner: flops1owner", `before: ${now / 1000 + 1}`].join("\n"));
    assert.equal(p.headers["x-flops-revocation-pubkey"], Buffer.from(ownerPub).toString("base64"));
    assert.equal(p.headers["x-flops-revocation-sign-mode"], "raw");
    const sig = Secp256k1Signature.fromFixedLength(fromBase64(String(p.headers["x-flops-revocation-signature"])));
    assert.ok(await Secp256k1.verifySignature(sig, sha256(toUtf8(doc)), ownerKey.pubkey));
  }
});

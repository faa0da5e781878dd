// A task's outputs and logs from its provider's endpoint, each request signed by the job's
// owner (worker/outputs: the X-Flops-* headers, ADR-036 from a browser wallet), and the
// outputs checked as flops-worker's own fetch checks them: the manifest's root recomputed
// from its file list, every file's size and sha256, and the manifest's result root equal to
// the result root the provider committed on chain.
import { sha256 } from "@cosmjs/crypto";
import { toBase64, toHex, toUtf8 } from "@cosmjs/encoding";

import type { Wallet } from "./wallet.js";

export interface OutputFile {
  path: string;
  size: number;
  sha256: string;
}

export interface Manifest {
  task_id: string;
  root: string;
  result_root: string;
  files: OutputFile[];
  logs: OutputFile[];
}

export interface CheckedFile extends OutputFile {
  ok: boolean;
  /** the bytes, kept to rebuild a BUILTIN gemm product's root */
  body?: Uint8Array;
  problem?: string;
}

export interface Checked {
  manifest: Manifest;
  /** the manifest's root recomputed from its files */
  rootOk: boolean;
  /** the manifest's result root is the chain's */
  resultRootOk: boolean;
  /** the files are the committed result: their root (a BUILTIN gemm's product: its PoCP
   * root) recomputed here is the chain's result root */
  boundOk: boolean;
  /** what boundOk compared */
  bound: string;
  files: CheckedFile[];
  logs: CheckedFile[];
}

/** signedFetch GETs url signed by the wallet (worker/outputs.SignedMessage, ADR-036). */
export async function signedFetch(url: string, wallet: Wallet, init: RequestInit = {}): Promise<Response> {
  const u = new URL(url);
  const ts = Math.floor(Date.now() / 1000);
  const nonce = toHex(crypto.getRandomValues(new Uint8Array(16)));
  const msg = ["GET", u.host, u.pathname, u.search.replace(/^\?/, ""), String(ts), nonce].join("\n");
  const { pubkey, signature } = await wallet.signArbitrary(toUtf8("flops-output-v2\n" + msg));
  const res = await fetch(u, {
    ...init,
    headers: {
      ...(init.headers ?? {}),
      "X-Flops-Address": wallet.address,
      "X-Flops-Pubkey": toBase64(pubkey),
      "X-Flops-Timestamp": String(ts),
      "X-Flops-Nonce": nonce,
      "X-Flops-Signature": toBase64(signature),
      "X-Flops-Sign-Mode": "adr036",
    },
  });
  if (!res.ok) {
    let why = res.statusText;
    try {
      why = ((await res.json()) as { error?: string }).error ?? why;
    } catch {
      // not JSON
    }
    throw new Error(`${res.status} from the provider: ${why}`);
  }
  return res;
}

const leafHash = (data: Uint8Array) => sha256(concat(new Uint8Array([0]), data));
const nodeHash = (l: Uint8Array, r: Uint8Array) => sha256(concat(new Uint8Array([1]), l, r));

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function merkleRoot(leaves: Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return sha256(new Uint8Array());
  if (leaves.length === 1) return leaves[0];
  let k = 1;
  while (2 * k < leaves.length) k *= 2;
  return nodeHash(merkleRoot(leaves.slice(0, k)), merkleRoot(leaves.slice(k)));
}

const byteCompare = (a: string, b: string) => {
  const x = toUtf8(a);
  const y = toUtf8(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
};

/** manifestRoot is worker/executor.ManifestRoot: RFC 6962's tree over leaves
 * path || 0x00 || sha256, the files sorted by path. */
export function manifestRoot(files: OutputFile[]): string {
  const sorted = [...files].sort((a, b) => byteCompare(a.path, b.path));
  const leaves = sorted.map((f) => {
    if (!/^[0-9a-f]{64}$/.test(f.sha256)) throw new Error(`manifest path ${f.path}: sha256 must be 64 lowercase hex characters`);
    return leafHash(concat(toUtf8(f.path), new Uint8Array([0]), hexBytes(f.sha256)));
  });
  return toHex(merkleRoot(leaves));
}

const hexBytes = (h: string) => new Uint8Array(h.match(/../g)!.map((b) => parseInt(b, 16)));

const fileURL = (base: string, path: string) => `${base.replace(/\/$/, "")}/${path.split("/").map(encodeURIComponent).join("/")}`;

/** fetchOutputs downloads a task's manifest and every file from outputsURL (the task's
 * output_uri on chain) and checks them against chainResultRoot (hex). */
export async function fetchOutputs(outputsURL: string, taskId: bigint, wallet: Wallet, chainResultRoot: string, builtinGemm: boolean): Promise<Checked> {
  const manifest = (await (await signedFetch(outputsURL, wallet)).json()) as Manifest;
  if (manifest.task_id !== taskId.toString()) throw new Error(`the manifest is for task ${manifest.task_id}, not ${taskId}`);
  const check = async (f: OutputFile): Promise<CheckedFile> => {
    try {
      const body = new Uint8Array(await (await signedFetch(fileURL(outputsURL, f.path), wallet)).arrayBuffer());
      const digest = toHex(sha256(body));
      if (body.length !== f.size) return { ...f, ok: false, problem: `${body.length} bytes, the manifest says ${f.size}` };
      if (digest !== f.sha256) return { ...f, ok: false, problem: `sha256 ${digest}, the manifest says ${f.sha256}` };
      return { ...f, ok: true, body };
    } catch (e) {
      return { ...f, ok: false, problem: e instanceof Error ? e.message : String(e) };
    }
  };
  const files = await Promise.all(manifest.files.map(check));
  let bound: string;
  let boundOk: boolean;
  if (builtinGemm) {
    const product = files.find((f) => f.path === PRODUCT_FILE);
    bound = `the PoCP root of ${PRODUCT_FILE}`;
    boundOk = !!product?.ok && !!product.body && productRoot(product.body) === chainResultRoot;
  } else {
    bound = "the root of the files";
    boundOk = manifestRoot(manifest.files) === chainResultRoot;
  }
  return {
    manifest,
    rootOk: manifestRoot(manifest.files) === manifest.root,
    resultRootOk: manifest.result_root === chainResultRoot,
    boundOk,
    bound,
    files,
    logs: await Promise.all(manifest.logs.map(check)),
  };
}

/** PRODUCT_FILE is a BUILTIN gemm task's output (worker/executor.ProductFile). */
export const PRODUCT_FILE = "product.i32le";

/** productRoot is x/gfl/pocp.BuildTree's root over a product file: leaves are its
 * 1,024-byte chunks (256 little-endian int32), each level pairs nodes left to right and
 * carries an odd last node up unchanged. */
export function productRoot(product: Uint8Array): string {
  if (product.length === 0 || product.length % 1024 !== 0) return "";
  let level: Uint8Array[] = [];
  for (let o = 0; o < product.length; o += 1024) level.push(leafHash(product.subarray(o, o + 1024)));
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i], level[i + 1]));
    if (level.length % 2 === 1) next.push(level[level.length - 1]);
    level = next;
  }
  return toHex(level[0]);
}

/** readLog reads a task's stdout or stderr from offset: the text, the next offset, and
 * whether the task still runs there (more may come). */
export async function readLog(endpoint: string, taskId: bigint, stream: "stdout" | "stderr", offset: number, wallet: Wallet) {
  const res = await signedFetch(`${endpoint.replace(/\/$/, "")}/v1/tasks/${taskId}/logs/${stream}?offset=${offset}`, wallet);
  const text = await res.text();
  return {
    text,
    next: Number(res.headers.get("X-Flops-Log-Offset") ?? offset + text.length),
    running: res.headers.get("X-Flops-Task-Running") === "true",
  };
}

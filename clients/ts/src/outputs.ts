// A task's outputs and logs from its provider's output server (worker/outputs), each
// request signed by the job's owner (ADR-036, as a browser wallet's signArbitrary signs),
// and held to the result on chain as `flops-worker fetch` holds them (worker/outputs.Fetch):
// the manifest is read once and must be the committed result before any file is
// downloaded; each file is read as a stream, hashed as it comes and cut off past the size
// the manifest gives it.
import { Random, Secp256k1, Sha256, sha256 } from "@cosmjs/crypto";
import { toBase64, toHex, toUtf8 } from "@cosmjs/encoding";

import { FAILED_ROOT_HEX } from "./results.js";

/** OutputFile is one file of a manifest (worker/executor.OutputFile). */
export interface OutputFile {
  path: string;
  size: number;
  sha256: string;
}

/** Manifest lists a task's outputs (worker/outputs.Manifest). */
export interface Manifest {
  task_id: string;
  /** the manifest root of files */
  root: string;
  /** the root the provider says it committed on chain */
  result_root: string;
  files: OutputFile[];
  logs: OutputFile[];
}

/** OutputSigner signs an output request as the job's owner (a wallet's signArbitrary), or
 * in its place (a session key, delegateOutputs). */
export interface OutputSigner {
  address: string;
  signArbitrary(data: Uint8Array): Promise<{ pubkey: Uint8Array; signature: Uint8Array }>;
  /** how signArbitrary signs: "adr036" (a wallet; the default) or "raw" (a session key) */
  signMode?: "adr036" | "raw";
  /** headers every request carries (a session key's delegation) */
  headers?: Record<string, string>;
  /** when a session key's delegation ends, unix seconds */
  expires?: number;
}

/** DELEGATION_DOMAIN starts a delegation (worker/outputs.DelegationDomain): v2 names its
 * issue time, which an owner's revocation is weighed against (revokeOutputSessions). */
export const DELEGATION_DOMAIN = "flops-output-delegation-v2";

/** delegationDoc is what an owner signs to let a session key (base64 of its compressed
 * public key) sign its requests to host from issued until expires, unix seconds
 * (worker/outputs.DelegationDoc). */
export function delegationDoc(owner: string, sessionKey: string, host: string, issued: number, expires: number): string {
  return [DELEGATION_DOMAIN, `owner: ${owner}`, `key: ${sessionKey}`, `host: ${host.toLowerCase()}`, `issued: ${issued}`, `expires: ${expires}`].join("\n");
}

/** delegateOutputs has the owner sign, once, a delegation of its requests to the output
 * server at endpoint to a new session key for ttlSeconds (at most a day: the server's
 * MaxDelegation), and returns the session's signer: a browser wallet prompts once, not for
 * every file and every read of a followed log. The key lives only in this signer; if it
 * may have leaked, revokeOutputSessions ends it. */
export async function delegateOutputs(owner: OutputSigner, endpoint: string, ttlSeconds = 8 * 3600, now = Date.now()): Promise<OutputSigner> {
  const host = new URL(endpoint).host;
  const keypair = await Secp256k1.makeKeypair(Random.getBytes(32));
  const pubkey = Secp256k1.compressPubkey(keypair.pubkey);
  const issued = Math.floor(now / 1000);
  const expires = issued + ttlSeconds;
  const doc = toUtf8(delegationDoc(owner.address, toBase64(pubkey), host, issued, expires));
  const signed = await owner.signArbitrary(doc);
  return {
    address: owner.address,
    signMode: "raw",
    expires,
    headers: {
      "X-Flops-Delegation": toBase64(doc),
      "X-Flops-Delegation-Pubkey": toBase64(signed.pubkey),
      "X-Flops-Delegation-Signature": toBase64(signed.signature),
      "X-Flops-Delegation-Sign-Mode": owner.signMode ?? "adr036",
    },
    async signArbitrary(data: Uint8Array) {
      const sig = await Secp256k1.createSignature(sha256(data), keypair.privkey);
      return { pubkey, signature: new Uint8Array([...sig.r(32), ...sig.s(32)]) };
    },
  };
}

/** REVOCATION_DOMAIN starts a revocation (worker/outputs.RevocationDomain). */
export const REVOCATION_DOMAIN = "flops-output-revocation-v1";

/** revocationDoc is what an owner signs to end its delegations issued before before, unix
 * seconds (worker/outputs.RevocationDoc). It names no host: one signature serves every
 * provider. */
export function revocationDoc(owner: string, before: number): string {
  return [REVOCATION_DOMAIN, `owner: ${owner}`, `before: ${before}`].join("\n");
}

/** Revocation is an owner's signed revocation: the headers that carry it. */
export interface Revocation {
  before: number;
  headers: Record<string, string>;
}

/** revokeOutputSessions has the owner sign, once (one wallet prompt), the end of every
 * delegation it issued up to now, for sendRevocation to take to each provider. Times are
 * whole seconds: it revokes before the next second (a delegation issued earlier in this
 * second is ended too; worker/outputs.RevokeAllUntil), and the owner's next delegation
 * must be issued at rv.before or later (delegateOutputs' now). */
export async function revokeOutputSessions(owner: OutputSigner, now = Date.now()): Promise<Revocation> {
  const before = Math.floor(now / 1000) + 1;
  const doc = toUtf8(revocationDoc(owner.address, before));
  const signed = await owner.signArbitrary(doc);
  return {
    before,
    headers: {
      "X-Flops-Revocation": toBase64(doc),
      "X-Flops-Revocation-Pubkey": toBase64(signed.pubkey),
      "X-Flops-Revocation-Signature": toBase64(signed.signature),
      "X-Flops-Revocation-Sign-Mode": owner.signMode ?? "adr036",
    },
  };
}

/** RevocationRefused is a provider's refusal of a revocation, with its HTTP status. */
export class RevocationRefused extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** sendRevocation takes rv to the output server at endpoint, naming taskId, one of the
 * owner's tasks it holds (POST /v1/tasks/{id}/revocation), and returns the time before
 * which the server refuses the owner's delegations from now on. */
export async function sendRevocation(endpoint: string, taskId: bigint, rv: Revocation): Promise<number> {
  const res = await fetch(`${endpoint.replace(/\/+$/, "")}/v1/tasks/${taskId}/revocation`, { method: "POST", headers: rv.headers });
  const body = (await res.json().catch(() => ({}))) as { error?: string; revoked_before?: string };
  if (!res.ok) throw new RevocationRefused(`${res.status} from the provider: ${body.error ?? res.statusText}`, res.status);
  const before = Number(body.revoked_before);
  if (!Number.isSafeInteger(before)) throw new Error(`the provider's answer names no revoked_before`);
  return before;
}

/** Held is an output server and the owner's tasks it may hold something of. */
export interface Held {
  endpoint: string;
  tasks: bigint[];
}

/** RevokeResult is one server's answer to revokeEverywhere. */
export interface RevokeResult {
  endpoint: string;
  /** the task the server took the revocation for, when it took it */
  task?: bigint;
  before?: number;
  error?: string;
}

/** revokeEverywhere takes rv to each server of held, naming its tasks in turn until one is
 * held there (a server that has pruned a task's outputs answers 404 for it); any other
 * failure ends the tries at that server (worker/outputs.RevokeEverywhere). */
export async function revokeEverywhere(rv: Revocation, held: Held[]): Promise<RevokeResult[]> {
  return Promise.all(
    held.map(async ({ endpoint, tasks }) => {
      const errors: string[] = [];
      for (const task of tasks) {
        try {
          return { endpoint, task, before: await sendRevocation(endpoint, task, rv) };
        } catch (e) {
          errors.push(e instanceof Error ? e.message : String(e));
          if (!(e instanceof RevocationRefused && e.status === 404)) break;
        }
      }
      return { endpoint, error: errors.join("; ") || "no task to name" };
    }),
  );
}

export interface CheckedFile extends OutputFile {
  ok: boolean;
  /** why it is not ok: it did not match the manifest, could not be read, or was not
   * downloaded because the manifest is not the committed result */
  problem?: string;
  /** the bytes, when fetchOutputs was asked to keep them (keep) and they match */
  body?: Uint8Array;
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
  /** the chain's root is the failed-run root, which binds no file: the files and logs are
   * checked against the manifest only */
  failedRun: boolean;
  /** the files were downloaded: false when the manifest was not the committed result */
  downloaded: boolean;
  /** why the manifest is not the committed result, when downloaded is false */
  refused?: string;
  files: CheckedFile[];
  logs: CheckedFile[];
}

/** PRODUCT_FILE is a BUILTIN gemm task's output (worker/executor.ProductFile). */
export const PRODUCT_FILE = "product.i32le";

/** MAX_MANIFEST_BYTES bounds a manifest read (worker/outputs' maxManifestBytes). */
export const MAX_MANIFEST_BYTES = 256 << 20;

/** MAX_LOG_CHUNK bounds one log response (worker/outputs.MaxLogChunk). */
export const MAX_LOG_CHUNK = 1 << 20;

/** signedFetch GETs url signed by the owner (worker/outputs.SignedMessage, ADR-036), or by
 * a session key in its place (raw, with its delegation's headers). */
export async function signedFetch(url: string, signer: OutputSigner, init: RequestInit = {}): Promise<Response> {
  const u = new URL(url);
  const ts = Math.floor(Date.now() / 1000);
  const nonce = toHex(Random.getBytes(16));
  const msg = ["GET", u.host, u.pathname, u.search.replace(/^\?/, ""), String(ts), nonce].join("\n");
  const { pubkey, signature } = await signer.signArbitrary(toUtf8("flops-output-v2\n" + msg));
  const res = await fetch(u, {
    ...init,
    headers: {
      ...(init.headers ?? {}),
      ...(signer.headers ?? {}),
      "X-Flops-Address": signer.address,
      "X-Flops-Pubkey": toBase64(pubkey),
      "X-Flops-Timestamp": String(ts),
      "X-Flops-Nonce": nonce,
      "X-Flops-Signature": toBase64(signature),
      "X-Flops-Sign-Mode": signer.signMode ?? "adr036",
    },
  });
  if (!res.ok) {
    let why = res.statusText;
    try {
      why = (JSON.parse(new TextDecoder().decode(await readAtMost(res, 4096))) as { error?: string }).error ?? why;
    } catch {
      // not JSON
    }
    throw new Error(`${res.status} from the provider: ${why}`);
  }
  return res;
}

/** TooLong is a body longer than its reader allows. */
class TooLong extends Error {}

/** readAtMost reads a response's body, at most limit bytes of it: more is an error (the
 * rest is not read). */
async function readAtMost(res: Response, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  await readBody(res, limit, (c) => chunks.push(c));
  return concat(...chunks);
}

/** readBody passes a response's body to each, chunk by chunk, and returns its length; it
 * throws TooLong as soon as the body passes limit bytes, and cancels the rest. */
async function readBody(res: Response, limit: number, each: (chunk: Uint8Array) => void): Promise<number> {
  if (!res.body) return 0;
  const reader = res.body.getReader();
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return n;
    n += value.length;
    if (n > limit) {
      await reader.cancel().catch(() => undefined);
      throw new TooLong(`more than ${limit} bytes`);
    }
    each(value);
  }
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

const fileURL = (base: string, path: string) => `${base.replace(/\/$/, "")}/${path.split("/").map(encodeURIComponent).join("/")}`;

/** parseManifest checks a manifest's shape: what a provider sends is not trusted to be one. */
function parseManifest(raw: unknown): Manifest {
  const m = raw as Manifest;
  const isFile = (f: unknown) => {
    const o = f as OutputFile;
    return typeof o === "object" && o !== null && typeof o.path === "string" && Number.isSafeInteger(o.size) && o.size >= 0 && typeof o.sha256 === "string";
  };
  if (
    typeof m !== "object" || m === null || typeof m.task_id !== "string" || typeof m.root !== "string" || typeof m.result_root !== "string" ||
    !Array.isArray(m.files) || !Array.isArray(m.logs) || !m.files.every(isFile) || !m.logs.every(isFile)
  ) {
    throw new Error("the provider's manifest is not a manifest (task_id, root, result_root, files, logs)");
  }
  return m;
}

export interface FetchOutputsOptions {
  /** the files downloaded at once (default 4) */
  concurrency?: number;
  /** keep the bytes of the files it names (that match) in CheckedFile.body */
  keep?: (path: string) => boolean;
}

/**
 * fetchOutputs reads a task's manifest from outputsURL (the task's output_uri on chain)
 * once and holds it to the chain's result root (hex): its result root must be the chain's
 * and, for every workload but BUILTIN gemm (builtinGemm), the root of its files too, or no
 * file is downloaded (downloaded false). A BUILTIN gemm task's product is held to the chain
 * by its PoCP root, rebuilt from its bytes. A task whose root is the failed-run root binds
 * no file: what its run left is checked against the manifest only (failedRun). Each file is
 * hashed as it streams in and cut off past its size in the manifest, so a provider cannot
 * make the caller hold more than the manifest says; only the files keep names (and the
 * gemm product, while its root is rebuilt) are held in memory.
 */
export async function fetchOutputs(
  outputsURL: string,
  taskId: bigint,
  signer: OutputSigner,
  chainResultRoot: string,
  builtinGemm: boolean,
  opts: FetchOutputsOptions = {},
): Promise<Checked> {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(await readAtMost(await signedFetch(outputsURL, signer), MAX_MANIFEST_BYTES)));
  } catch (e) {
    throw new Error(`the provider's manifest: ${e instanceof Error ? e.message : String(e)}`);
  }
  const manifest = parseManifest(raw);
  if (manifest.task_id !== taskId.toString()) throw new Error(`the manifest is for task ${manifest.task_id}, not ${taskId}`);
  const failedRun = chainResultRoot === FAILED_ROOT_HEX;
  let filesRoot = "";
  try {
    filesRoot = manifestRoot(manifest.files);
    manifestRoot(manifest.logs);
  } catch {
    // a malformed digest: rootOk stays false
  }
  const rootOk = filesRoot !== "" && filesRoot === manifest.root;
  const resultRootOk = manifest.result_root === chainResultRoot;
  const bound = builtinGemm ? `the PoCP root of ${PRODUCT_FILE}` : "the root of the files";
  const listsProduct = manifest.files.some((f) => f.path === PRODUCT_FILE);
  const committed = failedRun ? rootOk : rootOk && resultRootOk && (builtinGemm ? listsProduct : filesRoot === chainResultRoot);
  const notDownloaded = (f: OutputFile): CheckedFile => ({
    ...f,
    ok: false,
    problem: "not downloaded: the manifest is not the result committed on chain",
  });
  if (!committed) {
    const refused = !rootOk
      ? "its root is not the root of the files it lists"
      : !resultRootOk
        ? `its result root ${manifest.result_root} is not the one revealed on chain ${chainResultRoot}`
        : builtinGemm
          ? `it lists no ${PRODUCT_FILE}, the product whose root is on chain`
          : `its files have the root ${filesRoot}, not the result root revealed on chain ${chainResultRoot}`;
    return {
      manifest, rootOk, resultRootOk, boundOk: false, bound, failedRun, downloaded: false, refused,
      files: manifest.files.map(notDownloaded), logs: manifest.logs.map(notDownloaded),
    };
  }
  const gemmProduct = builtinGemm && !failedRun;
  const keep = (path: string) => (gemmProduct && path === PRODUCT_FILE) || (opts.keep?.(path) ?? false);
  const check = async (f: OutputFile): Promise<CheckedFile> => {
    try {
      const res = await signedFetch(fileURL(outputsURL, f.path), signer);
      const h = new Sha256();
      const parts: Uint8Array[] = [];
      let n: number;
      try {
        n = await readBody(res, f.size, (c) => {
          h.update(c);
          if (keep(f.path)) parts.push(c);
        });
      } catch (e) {
        if (e instanceof TooLong) return { ...f, ok: false, problem: `more than the ${f.size} bytes the manifest says` };
        throw e;
      }
      if (n !== f.size) return { ...f, ok: false, problem: `${n} bytes, the manifest says ${f.size}` };
      const digest = toHex(h.digest());
      if (digest !== f.sha256) return { ...f, ok: false, problem: `sha256 ${digest}, the manifest says ${f.sha256}` };
      return keep(f.path) ? { ...f, ok: true, body: concat(...parts) } : { ...f, ok: true };
    } catch (e) {
      return { ...f, ok: false, problem: e instanceof Error ? e.message : String(e) };
    }
  };
  const files = await mapLimited(manifest.files, opts.concurrency ?? 4, check);
  const logs = await mapLimited(manifest.logs, opts.concurrency ?? 4, check);
  let boundOk = !failedRun && filesRoot === chainResultRoot;
  if (gemmProduct) {
    const product = files.find((f) => f.path === PRODUCT_FILE);
    boundOk = !!product?.ok && !!product.body && productRoot(product.body) === chainResultRoot;
    if (product && !opts.keep?.(PRODUCT_FILE)) delete product.body;
  }
  return { manifest, rootOk, resultRootOk, boundOk, bound, failedRun, downloaded: true, files, logs };
}

/** mapLimited maps items through fn, at most limit at a time, keeping their order. */
async function mapLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const work = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, work));
  return out;
}

/** readLog reads a task's stdout or stderr from offset, at most MAX_LOG_CHUNK bytes: the
 * text, the next offset (never before offset, whatever the server says), and whether the
 * task still runs there (more may come). While more may come (the task runs, or the chunk
 * was full), a UTF-8 character whose bytes are not all there yet is left for the next
 * read: a log is written and read at any byte (a program's stdout to a file flushes 4 KiB
 * at a time), and decoding each read alone turned the halves of a character split between
 * two reads (tqdm's progress bars are drawn in such characters) into two U+FFFD. */
export async function readLog(endpoint: string, taskId: bigint, stream: "stdout" | "stderr", offset: number, signer: OutputSigner) {
  const res = await signedFetch(`${endpoint.replace(/\/$/, "")}/v1/tasks/${taskId}/logs/${stream}?offset=${offset}`, signer);
  const bytes = await readAtMost(res, MAX_LOG_CHUNK);
  const running = res.headers.get("X-Flops-Task-Running") === "true";
  const said = Number(res.headers.get("X-Flops-Log-Offset"));
  const end = Number.isSafeInteger(said) && said >= offset ? said : offset + bytes.length;
  const whole = running || bytes.length === MAX_LOG_CHUNK ? utf8Complete(bytes) : bytes.length;
  return {
    text: new TextDecoder().decode(bytes.subarray(0, whole)),
    next: Math.max(offset, end - (bytes.length - whole)),
    running,
  };
}

/** utf8Complete is the length of bytes without a UTF-8 character cut short at its end:
 * the bytes before the last character's first byte when fewer of its bytes follow it than
 * that byte announces. */
export function utf8Complete(bytes: Uint8Array): number {
  let i = bytes.length - 1;
  while (i >= 0 && bytes.length - i < 4 && (bytes[i]! & 0xc0) === 0x80) i--;
  if (i < 0) return bytes.length;
  const lead = bytes[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return bytes.length - i < need ? i : bytes.length;
}

/** LOG_TRIMMED starts a log that appendLog cut down. */
export const LOG_TRIMMED = "[earlier output not kept here]\n";

/** appendLog is log followed by text, keeping the newest kept characters (LOG_TRIMMED
 * first when it dropped any): a follower of a task that writes without end holds a bounded
 * log, not all of it. It never keeps half of a UTF-16 surrogate pair. */
export function appendLog(log: string, text: string, kept: number): string {
  const all = log + text;
  if (all.length <= kept) return all;
  let from = all.length - kept;
  const c = all.charCodeAt(from);
  if (c >= 0xdc00 && c <= 0xdfff) from++; // the second half of a pair whose first is dropped
  return LOG_TRIMMED + all.slice(from);
}

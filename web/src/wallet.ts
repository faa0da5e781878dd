// Wallets behind one interface: Keplr through window.keplr (the chain suggested from the
// repo's chain info first), or a local signer from a test mnemonic (demos and tests).
import { makeSignDoc, Secp256k1HdWallet, type StdSignature } from "@cosmjs/amino";
import { fromBase64, toBase64 } from "@cosmjs/encoding";
import { DirectSecp256k1HdWallet, type OfflineSigner } from "@cosmjs/proto-signing";
import { chain, delegateOutputs, type OutputSigner } from "@flopsnet/client";

import type { Config } from "./config.js";

export interface Wallet {
  kind: "keplr" | "local";
  address: string;
  signer: OfflineSigner;
  /** signArbitrary signs data as ADR-036 (what a provider's output endpoint accepts from a
   * browser: X-Flops-Sign-Mode adr036): the compressed public key and the 64-byte signature. */
  signArbitrary(data: Uint8Array): Promise<{ pubkey: Uint8Array; signature: Uint8Array }>;
}

const fromStd = (s: StdSignature) => ({ pubkey: fromBase64(s.pub_key.value as string), signature: fromBase64(s.signature) });

interface Keplr {
  experimentalSuggestChain(info: unknown): Promise<void>;
  enable(chainId: string): Promise<void>;
  getOfflineSignerAuto(chainId: string): Promise<OfflineSigner>;
  signArbitrary(chainId: string, signer: string, data: Uint8Array): Promise<StdSignature>;
}

export function keplrAvailable(): boolean {
  return typeof (window as unknown as { keplr?: Keplr }).keplr !== "undefined";
}

export async function keplrWallet(cfg: Config): Promise<Wallet> {
  const keplr = (window as unknown as { keplr?: Keplr }).keplr;
  if (!keplr) throw new Error("Keplr is not installed in this browser");
  // Only the site's chain info is suggested, with the site's endpoints: a chain or node
  // named by the page's link (?chain=, ?rpc=) is never added to the wallet, where it would
  // stay as the endpoint Keplr uses for that chain in every app.
  if (cfg.keplr.chainId === cfg.chainId) await keplr.experimentalSuggestChain(cfg.keplr);
  try {
    await keplr.enable(cfg.chainId);
  } catch (e) {
    if (!cfg.linked.chainId) throw e;
    throw new Error(
      `Keplr did not enable ${cfg.chainId}, the chain this page's link names (${e instanceof Error ? e.message : String(e)}): this site adds only its own chain, ${cfg.site.chainId}, to a wallet`,
    );
  }
  // Auto: direct signing for a software key, amino JSON for a Ledger (both are accepted).
  const signer = await keplr.getOfflineSignerAuto(cfg.chainId);
  const [account] = await signer.getAccounts();
  return {
    kind: "keplr",
    address: account.address,
    signer,
    signArbitrary: async (data) => fromStd(await keplr.signArbitrary(cfg.chainId, account.address, data)),
  };
}

export async function localWallet(mnemonic: string): Promise<Wallet> {
  const signer = await DirectSecp256k1HdWallet.fromMnemonic(mnemonic, { prefix: chain.bech32Prefix });
  const amino = await Secp256k1HdWallet.fromMnemonic(mnemonic, { prefix: chain.bech32Prefix });
  const [account] = await signer.getAccounts();
  return {
    kind: "local",
    address: account.address,
    signer,
    // the ADR-036 doc: no chain id, account number and sequence 0, no fee, one MsgSignData
    signArbitrary: async (data) => {
      const doc = makeSignDoc([{ type: "sign/MsgSignData", value: { signer: account.address, data: toBase64(data) } }], { amount: [], gas: "0" }, "", "", 0, 0);
      return fromStd((await amino.signAmino(account.address, doc)).signature);
    },
  };
}

/** SESSION_TTL is how long a wallet's delegation to a session key lasts (the server takes
 * at most a day). */
const SESSION_TTL = 8 * 3600;

const sessions = new Map<string, { signer: Promise<OutputSigner>; expires: number }>();

/** notBefore is, by wallet address, the time (unix seconds) its last revocation ended its
 * sessions before: a new delegation is issued no earlier (forgetOutputSessions). */
const notBefore = new Map<string, number>();

/** outputSession is the signer of the wallet's requests to the output server at endpoint:
 * a session key the wallet delegated them to, once per provider and SESSION_TTL
 * (delegateOutputs). Keplr prompts for each signArbitrary: signing every file and every
 * read of a followed log with the wallet had asked the user for each. */
export function outputSession(wallet: Wallet, endpoint: string): Promise<OutputSigner> {
  const key = `${wallet.address} ${new URL(endpoint).host}`;
  const now = Date.now() / 1000;
  const held = sessions.get(key);
  if (held && held.expires - now > 300) return held.signer;
  // issued no earlier than the wallet's last revocation (in the same second it would be
  // refused with the sessions it ended)
  const issued = Math.max(now, notBefore.get(wallet.address) ?? 0);
  const signer = delegateOutputs(wallet, endpoint, SESSION_TTL, issued * 1000);
  sessions.set(key, { signer, expires: issued + SESSION_TTL });
  signer.catch(() => sessions.delete(key)); // refused in the wallet: asked again next time
  return signer;
}

/** forgetOutputSessions drops the wallet's session keys this tab holds, once the wallet
 * signed a revocation of those issued before `before` (unix seconds): the next read of a
 * provider asks the wallet for a new one, issued at `before` or later. */
export function forgetOutputSessions(wallet: Wallet, before: number): void {
  for (const key of [...sessions.keys()]) if (key.startsWith(`${wallet.address} `)) sessions.delete(key);
  notBefore.set(wallet.address, Math.max(before, notBefore.get(wallet.address) ?? 0));
}

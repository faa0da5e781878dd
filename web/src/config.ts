// What the dashboard connects to: config.json beside index.html (the demo writes one for its
// localnet), then ?rpc=, ?rest= and ?chain= in the page's URL.
import localnetChainInfo from "../../chain/keplr/localnet.json";

export interface Config {
  chainId: string;
  /** CometBFT RPC, e.g. http://127.0.0.1:26657 */
  rpc: string;
  /** the node's REST gateway */
  rest: string;
  /** gas price for the fee, e.g. 0.01udps */
  gasPrice: string;
  /** Keplr chain info to suggest; the localnet's when absent */
  keplr?: Record<string, unknown>;
  /** a test mnemonic for a local signer: only ever set by a local demo or test */
  devMnemonic?: string;
}

export async function loadConfig(): Promise<Config> {
  let cfg: Partial<Config> = {};
  try {
    const res = await fetch("./config.json", { cache: "no-store" });
    if (res.ok) cfg = (await res.json()) as Partial<Config>;
  } catch {
    // no config.json: the defaults below
  }
  const q = new URLSearchParams(location.search);
  const chainId = q.get("chain") ?? cfg.chainId ?? "flops-local-1";
  const rpc = q.get("rpc") ?? cfg.rpc ?? "http://127.0.0.1:26657";
  const rest = q.get("rest") ?? cfg.rest ?? "http://127.0.0.1:1317";
  const keplr = cfg.keplr ?? { ...localnetChainInfo, chainId, rpc, rest };
  return { chainId, rpc, rest, gasPrice: cfg.gasPrice ?? "0.01udps", keplr, devMnemonic: cfg.devMnemonic };
}

// What the dashboard connects to: config.json beside index.html (the site's own; the demo
// writes one for its localnet), then ?rpc=, ?rest= and ?chain= in the page's URL, unless the
// site's config.json says "urlOverrides": false.
//
// A link is anyone's to write: one that points the site's page at a node of its maker's
// shows that node's made-up chain (prices, results "verified" against its own records) under
// the site's name, and sends the transactions a user signs there. So the page says, in a
// banner on every view, which of its endpoints came from the link, and the wallet is only
// ever offered the site's own chain and endpoints: a link cannot add its node to Keplr.
import localnetChainInfo from "../../chain/keplr/localnet.json";

/** Endpoints: what the page reads from and sends to. */
export interface Endpoints {
  chainId: string;
  /** CometBFT RPC, e.g. http://127.0.0.1:26657 */
  rpc: string;
  /** the node's REST gateway */
  rest: string;
}

export interface Config extends Endpoints {
  /** gas price for the fee, e.g. 0.01udps */
  gasPrice: string;
  /** Keplr chain info to suggest: the site's; the localnet's with the site's endpoints when
   * config.json has none. Never built from the link. */
  keplr: Record<string, unknown> & { chainId?: string };
  /** a test mnemonic for a local signer: only ever set by a local demo or test */
  devMnemonic?: string;
  /** the site's own endpoints, from config.json (or the localnet's defaults) */
  site: Endpoints;
  /** the endpoints the page's link set to something other than the site's: the page says so */
  linked: Partial<Endpoints>;
  /** the link's endpoints the site's config.json refuses ("urlOverrides": false) */
  ignored: Partial<Endpoints>;
}

/** SiteConfig is config.json. */
interface SiteConfig extends Partial<Endpoints> {
  gasPrice?: string;
  keplr?: Record<string, unknown>;
  devMnemonic?: string;
  /** whether ?rpc=, ?rest= and ?chain= may point the page elsewhere (default true) */
  urlOverrides?: boolean;
}

const PARAMS: [keyof Endpoints, string][] = [
  ["chainId", "chain"],
  ["rpc", "rpc"],
  ["rest", "rest"],
];

/** same says whether two endpoint values name the same thing (URLs compared as URLs). */
function same(key: keyof Endpoints, a: string, b: string): boolean {
  if (key === "chainId") return a === b;
  return new URL(a).href === new URL(b).href;
}

/** resolve merges the site's config.json with the page's query string (location.search). */
export function resolve(site: SiteConfig, search: string): Config {
  const own: Endpoints = {
    chainId: site.chainId ?? "flops-local-1",
    rpc: site.rpc ?? "http://127.0.0.1:26657",
    rest: site.rest ?? "http://127.0.0.1:1317",
  };
  const q = new URLSearchParams(search);
  const used: Endpoints = { ...own };
  const linked: Partial<Endpoints> = {};
  const ignored: Partial<Endpoints> = {};
  for (const [key, param] of PARAMS) {
    const v = q.get(param);
    if (v === null) continue;
    if (key === "chainId" ? !/^[A-Za-z0-9._-]{1,64}$/.test(v) : !isHttpURL(v)) {
      throw new Error(`?${param}=${v.slice(0, 80)} in the page's link: ${key === "chainId" ? "not a chain id" : "not an http or https URL"}`);
    }
    if (same(key, v, own[key])) continue;
    if (site.urlOverrides === false) {
      ignored[key] = v;
      continue;
    }
    used[key] = v;
    linked[key] = v;
  }
  const keplr = site.keplr ?? { ...localnetChainInfo, ...own };
  return { ...used, gasPrice: site.gasPrice ?? "0.01udps", keplr, devMnemonic: site.devMnemonic, site: own, linked, ignored };
}

function isHttpURL(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

export async function loadConfig(): Promise<Config> {
  let site: SiteConfig = {};
  try {
    const res = await fetch("./config.json", { cache: "no-store" });
    if (res.ok) site = (await res.json()) as SiteConfig;
  } catch {
    // no config.json: the defaults
  }
  return resolve(site, location.search);
}

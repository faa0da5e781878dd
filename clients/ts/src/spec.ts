// Job and pool specs in the form `flopsd tx market submit-job` and `create-pool` read: YAML or
// JSON with proto field names (snake_case, or the camelCase JSON names), enums by name,
// coins as {denom, amount}, durations as "600s", times in RFC 3339 (examples/job.yaml).
import { parse as parseYAML } from "yaml";

import { NodeSpec } from "./gen/flops/gfl/v1/tx.js";
import { JobSpec, PoolSpec } from "./gen/flops/market/v1/types.js";
import { type FieldSchema, messages } from "./schema.js";

/** SpecError names the field of a spec that could not be read. */
export class SpecError extends Error {
  constructor(
    readonly field: string,
    what: string,
  ) {
    super(`${field}: ${what}`);
    this.name = "SpecError";
  }
}

// A duration as the CLI reads one: proto3 JSON ("600s", "1.5s") or Go's form ("10m",
// "1h30m", "250ms").
function parseDuration(s: string, path: string): { seconds: bigint; nanos: number } {
  const m = /^(-?)((?:[0-9]+(?:\.[0-9]+)?(?:h|ms|us|µs|ns|m|s))+|0)$/.exec(s.trim());
  if (!m) {
    throw new SpecError(path, `duration ${JSON.stringify(s)} must be a number and a unit, e.g. "600s", "10m" or "1h30m"`);
  }
  const unitNanos: Record<string, bigint> = { h: 3_600_000_000_000n, m: 60_000_000_000n, s: 1_000_000_000n, ms: 1_000_000n, us: 1000n, "µs": 1000n, ns: 1n };
  let nanos = 0n;
  for (const p of m[2].matchAll(/([0-9]+)(?:\.([0-9]+))?(h|ms|us|µs|ns|m|s)/g)) {
    const unit = unitNanos[p[3]];
    nanos += BigInt(p[1]) * unit + (BigInt((p[2] ?? "").padEnd(18, "0").slice(0, 18)) * unit) / 10n ** 18n;
  }
  if (m[1] === "-") nanos = -nanos;
  return { seconds: nanos / 1_000_000_000n, nanos: Number(nanos % 1_000_000_000n) };
}

// A coin as the CLI reads one: "5000000udps" or {denom, amount}.
function parseCoin(s: string, path: string): { denom: string; amount: string } {
  const m = /^\s*([0-9]+)\s*([a-zA-Z][a-zA-Z0-9/:._-]{2,127})\s*$/.exec(s);
  if (!m) throw new SpecError(path, `${JSON.stringify(s)}: a coin is an amount and a denom, e.g. 5000000udps (5 DPS)`);
  return { denom: m[2], amount: m[1] };
}

// normalize checks every key against the message's schema (as the chain's JSON decoder
// refuses an unknown field) and turns duration strings into {seconds, nanos}, which
// ts-proto's fromJSON does not parse.
function normalize(typeName: string, obj: unknown, path: string): Record<string, unknown> {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
    throw new SpecError(path || typeName, "must be an object");
  }
  const schema = messages[typeName];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj as Record<string, unknown>)) {
    const f: FieldSchema | undefined = schema.f.find((x) => x.n === key || x.t === key);
    const fpath = path ? `${path}.${key}` : key;
    if (!f) {
      const known = schema.f.map((x) => x.n).join(", ");
      throw new SpecError(fpath, `unknown field (${typeName.split(".").pop()} has ${known})`);
    }
    if (value === null || value === undefined) continue;
    const one = (v: unknown, p: string): unknown => {
      if (f.k === "duration" && typeof v === "string") return parseDuration(v, p);
      if (f.k === "duration" && typeof v !== "object") throw new SpecError(p, `duration ${JSON.stringify(v)} must be a string, e.g. "600s"`);
      if (f.k === "timestamp" && typeof v === "string" && Number.isNaN(Date.parse(v))) {
        throw new SpecError(p, `time ${JSON.stringify(v)} is not RFC 3339, e.g. "2030-01-01T00:00:00Z"`);
      }
      if (f.k === "timestamp" && v instanceof Date) return v.toISOString();
      if (f.k === "message" && f.m === "cosmos.base.v1beta1.Coin" && typeof v === "string") return parseCoin(v, p);
      if (f.k === "message") return normalize(f.m as string, v, p);
      return v;
    };
    if (f.r) {
      if (!Array.isArray(value)) throw new SpecError(fpath, "must be a list");
      out[f.t] = value.map((v, i) => one(v, `${fpath}[${i}]`));
    } else {
      out[f.t] = one(value, fpath);
    }
  }
  return out;
}

function read(text: string | object): unknown {
  if (typeof text !== "string") return text;
  try {
    return parseYAML(text); // JSON is YAML
  } catch (e) {
    throw new SpecError("spec", `not YAML or JSON: ${(e as Error).message}`);
  }
}

// unknownEnums fails on an enum ts-proto read as UNRECOGNIZED (-1): a name it does not know.
function unknownEnums(typeName: string, obj: Record<string, unknown>, input: Record<string, unknown>, path: string): void {
  for (const f of messages[typeName].f) {
    const v = obj[f.t];
    const given = input?.[f.t] ?? input?.[f.n];
    const fpath = path ? `${path}.${f.n}` : f.n;
    if (f.k === "enum") {
      const vals = f.r ? (v as number[]) : [v as number];
      vals.forEach((x, i) => {
        if (x === -1) {
          const what = f.r ? (given as unknown[])[i] : given;
          throw new SpecError(f.r ? `${fpath}[${i}]` : fpath, `unknown value ${JSON.stringify(what)}`);
        }
      });
    } else if (f.k === "message" && v !== undefined) {
      if (f.r) {
        (v as Record<string, unknown>[]).forEach((x, i) =>
          unknownEnums(f.m as string, x, ((given as Record<string, unknown>[]) ?? [])[i], `${fpath}[${i}]`),
        );
      } else {
        unknownEnums(f.m as string, v as Record<string, unknown>, given as Record<string, unknown>, fpath);
      }
    }
  }
}

function fromJSON<T>(typeName: string, codec: { fromJSON(o: unknown): T }, input: string | object): T {
  const obj = normalize(typeName, read(input), "");
  let out: T;
  try {
    out = codec.fromJSON(obj);
  } catch (e) {
    throw new SpecError("spec", (e as Error).message);
  }
  unknownEnums(typeName, out as Record<string, unknown>, obj, "");
  return out;
}

/** jobSpecFromJSON reads a job spec (YAML text, JSON text or an object) as MsgSubmitJob's spec. */
export function jobSpecFromJSON(input: string | object): JobSpec {
  return fromJSON("flops.market.v1.JobSpec", JobSpec, input);
}

/** poolSpecFromJSON reads a pool spec (YAML text, JSON text or an object) as MsgCreatePool's spec. */
export function poolSpecFromJSON(input: string | object): PoolSpec {
  return fromJSON("flops.market.v1.PoolSpec", PoolSpec, input);
}

/** nodeSpecFromJSON reads a node spec (YAML text, JSON text or an object) as MsgRegisterNode's spec. */
export function nodeSpecFromJSON(input: string | object): NodeSpec {
  return fromJSON("flops.gfl.v1.NodeSpec", NodeSpec, input);
}

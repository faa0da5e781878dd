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

// A proto3 JSON duration: decimal seconds with an "s" suffix.
function parseDuration(s: string, path: string): { seconds: bigint; nanos: number } {
  const m = /^(-?)([0-9]+)(?:\.([0-9]{1,9}))?s$/.exec(s.trim());
  if (!m) throw new SpecError(path, `duration ${JSON.stringify(s)} must be seconds with an "s" suffix, e.g. "600s" or "1.5s"`);
  const sign = m[1] === "-" ? -1 : 1;
  const seconds = BigInt(m[2]) * BigInt(sign);
  const nanos = Number((m[3] ?? "").padEnd(9, "0")) * sign;
  return { seconds, nanos };
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
      if (f.k === "timestamp" && typeof v === "string" && Number.isNaN(Date.parse(v))) {
        throw new SpecError(p, `time ${JSON.stringify(v)} is not RFC 3339, e.g. "2030-01-01T00:00:00Z"`);
      }
      if (f.k === "timestamp" && v instanceof Date) return v.toISOString();
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

function fromJSON<T>(typeName: string, codec: { fromJSON(o: unknown): T }, input: string | object): T {
  const obj = normalize(typeName, read(input), "");
  try {
    return codec.fromJSON(obj);
  } catch (e) {
    // ts-proto's enum parsers throw "Unrecognized enum value X for enum Y"
    throw new SpecError("spec", (e as Error).message);
  }
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

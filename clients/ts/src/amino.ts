// Amino JSON for every flops Msg, as the chain's SIGN_MODE_LEGACY_AMINO_JSON handler writes it
// (cosmos-sdk x/tx/signing/aminojson): proto field names, zero values left out unless the field
// says amino.dont_omitempty, 64-bit integers and cosmos.Int as strings, cosmos.Dec as a decimal
// with 18 places, enums as numbers, bytes as base64, a Timestamp as RFC 3339 and a Duration as
// its nanoseconds. A Ledger or a multisig signs these bytes and the chain recomputes them from
// the protobuf body, so a converter that differs from the chain's by one field is a refused
// signature; the vectors in test/ hold the chain's own output for every Msg.
//
// The converters are driven by schema.ts, which scripts/tsgen writes from the chain's proto
// registry (the same descriptors, options included, that the chain's sign-mode handler reads).
import { fromBase64, toBase64 } from "@cosmjs/encoding";
import type { AminoConverters } from "@cosmjs/stargate";

import { type FieldSchema, messages, msgs } from "./schema.js";

type Obj = Record<string, unknown>;

/** AminoConversionError names the field that cannot be written as amino JSON. */
export class AminoConversionError extends Error {
  constructor(path: string, what: string) {
    super(`${path}: ${what}`);
    this.name = "AminoConversionError";
  }
}

const decimals = 18n;
const decimalScale = 10n ** decimals;

// atomicsToDec writes a cosmos.Dec's wire form (the integer of value * 10^18, as gogoproto's
// LegacyDec marshals it) as LegacyDec.String() does: always 18 places.
function atomicsToDec(atomics: string, path: string): string {
  if (!/^-?[0-9]+$/.test(atomics)) {
    throw new AminoConversionError(path, `cosmos.Dec wire value ${JSON.stringify(atomics)} is not an integer`);
  }
  let v = BigInt(atomics);
  const neg = v < 0n;
  if (neg) v = -v;
  const frac = (v % decimalScale).toString().padStart(Number(decimals), "0");
  return `${neg ? "-" : ""}${v / decimalScale}.${frac}`;
}

function decToAtomics(dec: string, path: string): string {
  const m = /^(-?)([0-9]+)(?:\.([0-9]{1,18}))?$/.exec(dec);
  if (!m) {
    throw new AminoConversionError(path, `${JSON.stringify(dec)} is not a decimal with at most 18 places`);
  }
  const v = BigInt(m[2]) * decimalScale + BigInt((m[3] ?? "").padEnd(Number(decimals), "0"));
  return (m[1] === "-" && v !== 0n ? -v : v).toString();
}

// Go's time.Format(RFC3339) for whole seconds, RFC3339Nano (trailing zeros cut) otherwise,
// always in UTC.
function timestampToAmino(ts: Obj, path: string): string {
  const seconds = BigInt((ts.seconds as bigint | undefined) ?? 0n);
  const nanos = Number(ts.nanos ?? 0);
  if (nanos < 0 || nanos > 999_999_999) {
    throw new AminoConversionError(path, `timestamp nanos ${nanos} out of range`);
  }
  const ms = seconds * 1000n;
  if (ms < -62135596800000n || ms > 253402300799000n) {
    throw new AminoConversionError(path, `timestamp ${seconds}s is outside years 0001-9999`);
  }
  const iso = new Date(Number(ms)).toISOString(); // YYYY-MM-DDTHH:MM:SS.000Z
  const base = iso.slice(0, 19);
  if (nanos === 0) return `${base}Z`;
  return `${base}.${nanos.toString().padStart(9, "0").replace(/0+$/, "")}Z`;
}

function timestampFromAmino(s: string, path: string): Obj {
  const m = /^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?Z$/.exec(s);
  if (!m) throw new AminoConversionError(path, `${JSON.stringify(s)} is not an RFC 3339 UTC time`);
  const ms = Date.parse(`${m[1]}Z`);
  if (Number.isNaN(ms)) throw new AminoConversionError(path, `${JSON.stringify(s)} is not a valid time`);
  return { seconds: BigInt(ms / 1000), nanos: Number((m[2] ?? "").padEnd(9, "0")) };
}

function durationToAmino(d: Obj): string {
  const seconds = BigInt((d.seconds as bigint | undefined) ?? 0n);
  return (seconds * 1_000_000_000n + BigInt(Number(d.nanos ?? 0))).toString();
}

function durationFromAmino(s: string, path: string): Obj {
  if (!/^-?[0-9]+$/.test(s)) throw new AminoConversionError(path, `duration ${JSON.stringify(s)} is not nanoseconds`);
  const n = BigInt(s);
  return { seconds: n / 1_000_000_000n, nanos: Number(n % 1_000_000_000n) };
}

// isSet is protoreflect's Message.Has for a proto3 field without presence: a scalar that is
// not its zero value, a non-empty list, a message that is there.
function isSet(f: FieldSchema, v: unknown): boolean {
  if (f.r) return Array.isArray(v) && v.length > 0;
  switch (f.k) {
    case "message":
    case "timestamp":
    case "duration":
      return v !== undefined && v !== null;
    case "string":
      return typeof v === "string" && v !== "";
    case "bool":
      return v === true;
    case "bytes":
      return v instanceof Uint8Array && v.length > 0;
    case "int64":
    case "uint64":
      return v !== undefined && v !== null && BigInt(v as bigint) !== 0n;
    default:
      return v !== undefined && v !== null && Number(v) !== 0;
  }
}

function scalarToAmino(f: FieldSchema, v: unknown, path: string): unknown {
  switch (f.k) {
    case "message":
      return messageToAmino(f.m as string, (v ?? {}) as Obj, path);
    case "timestamp":
      return timestampToAmino((v ?? {}) as Obj, path);
    case "duration":
      return durationToAmino((v ?? {}) as Obj);
    case "string": {
      const s = (v ?? "") as string;
      if (f.e === "int") return s === "" ? "0" : s;
      if (f.e === "dec") return s === "" ? "0" : atomicsToDec(s, path);
      return s;
    }
    case "bool":
      return v === true;
    case "bytes":
      return toBase64((v ?? new Uint8Array()) as Uint8Array);
    case "int64":
    case "uint64":
      return BigInt((v ?? 0n) as bigint).toString();
    default:
      return Number(v ?? 0);
  }
}

function scalarFromAmino(f: FieldSchema, v: unknown, path: string): unknown {
  switch (f.k) {
    case "message":
      return messageFromAmino(f.m as string, (v ?? {}) as Obj, path);
    case "timestamp":
      return timestampFromAmino(v as string, path);
    case "duration":
      return durationFromAmino(v as string, path);
    case "string": {
      const s = (v ?? "") as string;
      // "0" is what the chain writes for an empty cosmos.Dec (a set one has 18 places)
      if (f.e === "dec") return s === "0" || s === "" ? "" : decToAtomics(s, path);
      return s;
    }
    case "bool":
      return v === true;
    case "bytes":
      return v === null || v === undefined ? new Uint8Array() : fromBase64(v as string);
    case "int64":
    case "uint64":
      return v === null || v === undefined ? 0n : BigInt(v as string);
    default:
      return v === null || v === undefined ? 0 : Number(v);
  }
}

/** messageToAmino writes a ts-proto message of the named proto type as amino JSON. */
export function messageToAmino(typeName: string, msg: Obj, path = typeName): Obj {
  const schema = messages[typeName];
  if (!schema) throw new AminoConversionError(path, `no amino schema for ${typeName}`);
  const out: Obj = {};
  for (const f of schema.f) {
    const v = msg[f.t];
    const fpath = `${path}.${f.n}`;
    if (!isSet(f, v)) {
      if (!f.keep) continue;
      if (f.r) {
        // an empty list: the chain writes [] for legacy_coins, null otherwise
        out[f.a] = f.e === "legacy_coins" || f.e === "null_slice_as_empty" ? [] : null;
        continue;
      }
      out[f.a] = scalarToAmino(f, f.k === "message" || f.k === "timestamp" || f.k === "duration" ? {} : undefined, fpath);
      continue;
    }
    if (f.r) {
      out[f.a] = (v as unknown[]).map((x, i) => scalarToAmino(f, x, `${fpath}[${i}]`));
    } else {
      out[f.a] = scalarToAmino(f, v, fpath);
    }
  }
  return out;
}

/** messageFromAmino reads amino JSON of the named proto type back into a ts-proto message. */
export function messageFromAmino(typeName: string, json: Obj, path = typeName): Obj {
  const schema = messages[typeName];
  if (!schema) throw new AminoConversionError(path, `no amino schema for ${typeName}`);
  const out: Obj = {};
  for (const f of schema.f) {
    const v = json[f.a];
    const fpath = `${path}.${f.n}`;
    if (f.r) {
      out[f.t] = Array.isArray(v) ? v.map((x, i) => scalarFromAmino(f, x, `${fpath}[${i}]`)) : [];
    } else if (f.k === "message" || f.k === "timestamp" || f.k === "duration") {
      out[f.t] = v === undefined || v === null ? undefined : scalarFromAmino(f, v, fpath);
    } else {
      out[f.t] = scalarFromAmino(f, v, fpath);
    }
  }
  return out;
}

/**
 * flopsAminoConverters: one converter per flops Msg, keyed by its type URL, for CosmJS's
 * AminoTypes. The amino type is the Msg's amino.name option ("flops/market/MsgSubmitJob").
 */
export function flopsAminoConverters(): AminoConverters {
  const out: AminoConverters = {};
  for (const m of msgs) {
    out[m.typeUrl] = {
      aminoType: m.aminoName,
      toAmino: (value: Obj) => messageToAmino(m.typeUrl.slice(1), value),
      fromAmino: (value: Obj) => messageFromAmino(m.typeUrl.slice(1), value),
    };
  }
  return out;
}

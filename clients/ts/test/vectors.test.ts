// The chain's own amino JSON (test/vectors.json, written by tools/tsgen through the app's
// SIGN_MODE_LEGACY_AMINO_JSON handler) for every flops Msg: with every field set, with only
// zero values, and drawn at random with zeros, empty lists, negative and large numbers,
// fractional times and characters JSON escapes. The client's converters must write exactly
// it from the same protobuf bytes, and read it back into a Msg that writes it again: a
// Ledger or multisig signature from this client verifies on the chain only then.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { fromBase64 } from "@cosmjs/encoding";

import { flopsAminoTypes, flopsMsgs, flopsRegistry } from "../src/index.js";

interface Vector {
  name: string;
  typeUrl: string;
  proto: string;
  aminoType: string;
  amino: Record<string, unknown>;
}

const vectors: Vector[] = JSON.parse(readFileSync(new URL("../../test/vectors.json", import.meta.url), "utf8"));
const registry = flopsRegistry();
const amino = flopsAminoTypes();

test("vectors cover every flops Msg, five times each", () => {
  const urls = new Set(vectors.map((v) => v.typeUrl));
  assert.equal(flopsMsgs.length, 37);
  for (const m of flopsMsgs) assert.ok(urls.has(m.typeUrl), `${m.typeUrl} has no vector`);
  assert.equal(vectors.length, 5 * flopsMsgs.length);
});

for (const v of vectors) {
  test(`amino JSON equals the chain's: ${v.name}`, () => {
    const value = registry.decode({ typeUrl: v.typeUrl, value: fromBase64(v.proto) });
    const got = amino.toAmino({ typeUrl: v.typeUrl, value });
    assert.equal(got.type, v.aminoType);
    assert.deepStrictEqual(got.value, v.amino);

    // back from amino JSON (what CosmJS puts in the body of an amino-signed tx)
    const back = amino.fromAmino({ type: v.aminoType, value: v.amino });
    assert.equal(back.typeUrl, v.typeUrl);
    const bytes = registry.encode(back);
    const again = amino.toAmino({ typeUrl: v.typeUrl, value: registry.decode({ typeUrl: v.typeUrl, value: bytes }) });
    assert.deepStrictEqual(again.value, v.amino);
  });
}

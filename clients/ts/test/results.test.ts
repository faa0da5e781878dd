// The failed-run root is the chain's (x/market/types.FailedRoot, pinned by its Go test to
// the same digest): sha256 of its domain string.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

import { fromHex } from "@cosmjs/encoding";

import { FAILED_ROOT_HEX, isFailedRoot } from "../src/index.js";

test("the failed-run root is sha256 of its domain", () => {
  assert.equal(FAILED_ROOT_HEX, createHash("sha256").update("flops/market/failed-run").digest("hex"));
  const root = fromHex(FAILED_ROOT_HEX);
  assert.ok(isFailedRoot(root));
  root[31] ^= 1;
  assert.ok(!isFailedRoot(root));
  assert.ok(!isFailedRoot(new Uint8Array()));
});

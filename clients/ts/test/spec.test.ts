// Specs in the form the CLI reads them (examples/*.yaml), and errors that name the field.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { jobSpecFromJSON, nodeSpecFromJSON, poolSpecFromJSON, SpecError } from "../src/index.js";

const example = (name: string) => readFileSync(new URL(`../../../../examples/${name}`, import.meta.url), "utf8");

test("the examples read as the CLI reads them", () => {
  const job = jobSpecFromJSON(example("job.yaml"));
  assert.equal(job.taskCount, 4);
  assert.deepEqual(job.maxPricePerTask, { denom: "udps", amount: "5000000" });
  assert.deepEqual(job.maxDuration, { seconds: 600n, nanos: 0 });
  assert.deepEqual(job.deadline, { seconds: 1893456000n, nanos: 0 });
  assert.equal(job.requirements?.minMemoryMib, 16000n);
  const pool = poolSpecFromJSON(example("pool.yaml"));
  assert.equal(pool.maxProviders, 8);
  const node = nodeSpecFromJSON(example("node.yaml"));
  assert.equal(node.gpus.length, 2);
});

test("coins as strings, Go durations, camelCase names", () => {
  const job = jobSpecFromJSON({ maxPricePerTask: "5000000udps", max_duration: "1h30m", checkpoint_interval: "1.5s", priority_tip: "0udps" });
  assert.deepEqual(job.maxPricePerTask, { denom: "udps", amount: "5000000" });
  assert.deepEqual(job.maxDuration, { seconds: 5400n, nanos: 0 });
  assert.deepEqual(job.checkpointInterval, { seconds: 1n, nanos: 500_000_000 });
});

test("errors name the field", () => {
  for (const [spec, field] of [
    [{ max_price_per_task: "five dps" }, "max_price_per_task"],
    [{ max_duration: "ten minutes" }, "max_duration"],
    [{ deadline: "tomorrow" }, "deadline"],
    [{ requirements: { gpu_count: 1, colour: "red" } }, "requirements.colour"],
    [{ env: [{ name: "A" }, 3] }, "env[1]"],
    [{ env: { name: "A" } }, "env"],
  ] as const) {
    assert.throws(
      () => jobSpecFromJSON(spec),
      (e: unknown) => e instanceof SpecError && e.field === field,
      JSON.stringify(spec),
    );
  }
  assert.throws(
    () => jobSpecFromJSON("mode: ALLOCATION_MODE_NOPE"),
    (e: unknown) => e instanceof SpecError && e.field === "mode" && /ALLOCATION_MODE_NOPE/.test(e.message),
  );
  assert.throws(
    () => nodeSpecFromJSON({ workloads: ["WORKLOAD_CLASS_BATCH", "BATCHY"] }),
    (e: unknown) => e instanceof SpecError && e.field === "workloads[1]",
  );
});

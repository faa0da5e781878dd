// Package pocp is the mathematics of the Proof-of-Computing-Power (PoCP) challenge of the
// flops chain, as specified normatively in docs/pocp.md.
//
// A challenge (seed, n, r) asks a node for S = sum_{t<r} A_t * B_t, an exact n x n int32
// matrix product whose int8 inputs in {-2..2} come from a counter-based PRNG keyed by the
// seed. The node commits the RFC 6962 Merkle root of S cut into 1 KiB chunks, the chain
// samples k entries from a later block hash, and the node reveals the chunks holding them
// with audit paths. The chain recomputes each sampled entry alone in O(r*n).
//
// Two sides share this package:
//
//   - The chain side (challenge.go, sample.go, merkle.go, reveal.go, size.go) is
//     deterministic: integers only, no time, no randomness beyond the seeds, no goroutines,
//     no map iteration. The x/gfl keeper uses Challenge.Validate, ChallengeSeed,
//     SampleSeed, SamplePositions, VerifyReveal, VerifyTerms (to charge gas), PowerGFLOPS
//     and ChooseSize.
//   - The worker side (solve.go, tree.go) solves the challenge and builds the commitment
//     (ReferenceSolve, naive, for tests; Solve, the multi-core CPU solver; BuildTree,
//     Prove). It may use goroutines, all started in solve.go, and is never called by the
//     state machine.
//
// Errors are the exported sentinels of errors.go, wrapped with the offending value, so the
// chain maps them to its registered errors with errors.Is.
package pocp

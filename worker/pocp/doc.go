// Package pocp is the worker's side of the Proof-of-Computing-Power challenge
// (docs/pocp.md): it computes the answer S of a challenge, commits to it and opens the
// sampled chunks. The mathematics lives in x/gfl/pocp, the one Go implementation the chain
// also runs; this package only chooses how S is computed and wraps the result for the
// agent.
//
//   - A Solver computes S. NewGoSolver is the multi-core CPU solver of x/gfl/pocp;
//     NewExternalSolver runs an external program (a GPU solver such as tools/gpu-solver)
//     through the protocol of docs/pocp.md section 9 and spot-checks its answer against
//     x/gfl/pocp's Challenge.Entry before anything uses it; Fallback puts a second solver
//     behind a first one.
//   - Prepare solves a challenge and builds its Merkle tree into an Answer, whose Root goes
//     into MsgCommitChallenge (or a BUILTIN_GEMM result root) and whose Proofs go into
//     MsgRevealChallenge, MsgRevealResult and MsgRevealUnit.
//   - Benchmark measures a solver in GFLOP/s: what `flops-worker benchmark` prints and
//     what a node claims as its power.
//
// A wrong answer costs the node a slash, so every path that could produce one (a solver
// returning the wrong length, an external program answering short, long, late or wrong)
// is an error here, never a commitment.
package pocp

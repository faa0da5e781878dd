// Package executor runs the tasks of flops market jobs on a provider's machine.
//
// For one task it fetches the job's inputs and checks each against its sha256 (a cache
// keyed by digest keeps them across tasks), runs the workload, reports the checkpoints
// the workload writes, and computes the result root that the provider commits and reveals
// on chain:
//
//   - BUILTIN "gemm": the exact GEMM of x/gfl/pocp, solved on the CPU; the root is the
//     pocp Merkle root of the product, and GemmResult opens sampled chunks for the reveal.
//   - BUILTIN "checksum": a streaming SHA-256 over the inputs and a counter stream of
//     (job, shard), so that replicas agree bit for bit.
//   - PROCESS: a command in the task's working directory, in its own process group, pinned
//     to its GPUs with CUDA_VISIBLE_DEVICES, killed with its children on cancellation or
//     when it outlives the job's max duration. A cancellation whose cause is
//     ErrWorkerShutdown leaves it running instead (ErrDetached), recorded in the task
//     directory, for a later Executor on the same WorkDir to Adopt.
//   - CONTAINER: an image pinned by digest, run by docker or podman without a network.
//
// Every workload but gemm is judged by the manifest root of its output directory
// (ManifestRoot). docs/workloads.md specifies the task environment, the checksum
// workload and the roots so that a job owner or a replica can recompute them.
//
// The executor never touches chain state; the agent turns a Result into a commitment and
// a reveal, and Hooks.Checkpoint into MsgCheckpoint.
package executor

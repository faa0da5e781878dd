// Package telemetry is the worker's observability: Prometheus metrics on its
// own registry (tasks, GPUs, proof-of-compute challenges, transactions, chain
// sync, liveness), a sampler that copies NVML readings into them, and the
// HTTP server for /metrics, /healthz and /readyz.
//
// Every metric is named flops_worker_* and uses base units: seconds, bytes,
// watts, joules, degrees Celsius; percentages are 0-100. Label values must
// come from small fixed sets (workload class, msg type URL, failure reason,
// GPU UUID), never job or task ids.
package telemetry

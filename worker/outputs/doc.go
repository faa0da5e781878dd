// Package outputs keeps the outputs of the tasks a provider ran and serves them to the
// job's owner, and only to the owner.
//
// A Store is content addressed: file contents live once under their sha256, and each
// task has a manifest listing its files (path, size, sha256), its logs, the manifest
// root of its files (executor.ManifestRoot) and the result root the provider committed
// on chain.
//
// Handler serves GET /v1/tasks/{id}/outputs (the manifest as JSON) and
// GET /v1/tasks/{id}/outputs/{path...} (one file). Each request is signed with the
// owner's secp256k1 account key (SignRequest); the server checks the key against the
// address, the address against the task's owner on chain, the timestamp against a
// five-minute window and the signature. A session key may sign in the owner's place under
// a delegation the owner signed (delegation.go), until the owner revokes it
// (POST /v1/tasks/{id}/revocation, revocation.go). Fetch is the owner's side: it downloads a task's
// outputs and checks every file and the root. docs/workloads.md section 9 specifies the
// protocol.
package outputs

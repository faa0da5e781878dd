//go:build !unix

package e2e

import (
	"testing"

	"github.com/cosmos/cosmos-sdk/testutil/network"
)

// checkQueryPageDefault runs flopsd as a process (cli_page_test.go), on unix only.
func checkQueryPageDefault(t *testing.T, _ *network.Validator) {
	t.Log("flopsd's CLI page default: checked on unix")
}

// checkWorkerStatus runs flops-worker as a process (worker_status_test.go), on unix only.
func checkWorkerStatus(t *testing.T, _ *testWorker, _ uint64) func() {
	return func() { t.Log("flops-worker status: checked on unix") }
}

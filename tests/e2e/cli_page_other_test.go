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

//go:build !cgo

package gpu

import (
	"context"
	"strings"
	"testing"
)

// Without cgo there is no NVML: Open gives the CPU-only inventory, not an error.
func TestOpenWithoutCgo(t *testing.T) {
	inv, err := Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Backend() != BackendNone || !strings.Contains(FallbackReason(inv), "cgo") {
		t.Fatalf("backend %q reason %q", inv.Backend(), FallbackReason(inv))
	}
	if devs, err := inv.Devices(context.Background()); err != nil || len(devs) != 0 {
		t.Errorf("Devices = %v, %v", devs, err)
	}
}

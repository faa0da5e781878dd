//go:build cgo

package gpu

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/flopsnet/flops/worker/gpu/gpumock"
)

// dgx is gpumock's DGX A100 (8 × A100-40GB with its counters set) for these tests.
type dgx struct{ *gpumock.DGX }

func newDGX(t *testing.T) *dgx {
	t.Helper()
	return &dgx{gpumock.NewDGX()}
}

func (s *dgx) dev(i int) *dgxa100.Device { return s.Dev(i) }

// migSlice is one MIG device to carve (gpumock.MIGSlice).
type migSlice struct {
	giProfile int
	ciSlices  uint32
}

// enableMIG is gpumock's EnableMIG (slot 1 left empty), failing the test on error.
func (s *dgx) enableMIG(t *testing.T, i int, slices ...migSlice) []*mock.Device {
	t.Helper()
	var sl []gpumock.MIGSlice
	for _, x := range slices {
		sl = append(sl, gpumock.MIGSlice{GIProfile: x.giProfile, CISlices: x.ciSlices})
	}
	migs, err := s.EnableMIG(i, sl...)
	if err != nil {
		t.Fatal(err)
	}
	return migs
}

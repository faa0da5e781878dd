//go:build !cgo

package gpu

import "log/slog"

// Open is the CPU-only inventory: this binary was built without cgo, and NVML
// needs it.
func Open(log *slog.Logger) (Inventory, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reason := "built without cgo (CGO_ENABLED=0): NVML unavailable"
	log.With("component", "gpu").Warn("no GPU backend, offering CPU only", "reason", reason)
	return NewCPUOnly(reason), nil
}

package gpu

import (
	"context"
	"fmt"
)

// CPUOnly is the inventory of a machine without a usable GPU: no devices.
type CPUOnly struct {
	reason string
}

var _ Inventory = (*CPUOnly)(nil)

// NewCPUOnly is the CPU-only inventory; reason says why there is no GPU backend
// (shown by `flops-worker inventory` and logged at start).
func NewCPUOnly(reason string) *CPUOnly {
	return &CPUOnly{reason: reason}
}

// Reason says why the worker has no GPU backend.
func (c *CPUOnly) Reason() string { return c.reason }

// Devices is always empty.
func (c *CPUOnly) Devices(ctx context.Context) ([]Device, error) {
	return nil, ctx.Err()
}

// Sample always fails with ErrUnknownDevice: there is nothing to sample.
func (c *CPUOnly) Sample(ctx context.Context, uuid string) (Sample, error) {
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	return Sample{}, fmt.Errorf("%w %q: no GPU backend (%s)", ErrUnknownDevice, uuid, c.reason)
}

// Close does nothing.
func (c *CPUOnly) Close() error { return nil }

// Backend is BackendNone.
func (c *CPUOnly) Backend() string { return BackendNone }

// FallbackReason is why inv has no GPU backend, or "" when it has one.
func FallbackReason(inv Inventory) string {
	if c, ok := inv.(*CPUOnly); ok {
		return c.reason
	}
	return ""
}

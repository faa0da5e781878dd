package gpu

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Describe renders devices as the table `flops-worker inventory` prints: one
// row per GPU, then one indented row per MIG device under it.
func Describe(devs []Device) string {
	if len(devs) == 0 {
		return "no GPUs: CPU only\n"
	}
	// Writes go to a strings.Builder, which never fails.
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "INDEX\tUUID\tMODEL\tMEMORY\tCC\tTENSOR\tMIG\tPOWER")
	for _, d := range devs {
		_, _ = fmt.Fprintf(w, "%d\t%s\t%s\t%d MiB\t%s\t%s\t%s\t%s\n",
			d.Index, d.UUID, d.Model, d.MemoryMiB, d.ComputeCapability,
			yesNo(d.TensorCores), migState(d), power(d.PowerLimitWatts))
		for _, m := range d.MIG {
			_, _ = fmt.Fprintf(w, "  └ mig\t%s\t%s\t%d MiB\t\t\t\t\n", m.UUID, m.Profile, m.MemoryMiB)
		}
	}
	_ = w.Flush()
	return b.String()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func migState(d Device) string {
	switch {
	case d.MIGEnabled:
		return fmt.Sprintf("on (%d)", len(d.MIG))
	case d.MIGCapable:
		return "off"
	default:
		return "-"
	}
}

func power(watts uint32) string {
	if watts == 0 {
		return "-"
	}
	return fmt.Sprintf("%d W", watts)
}

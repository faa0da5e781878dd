package telemetry

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// These stand in for prometheus/testutil, which needs a module (kylelemons/
// godebug) that go.mod does not list yet.

// collect gathers what c exports, in collection order.
func collect(t *testing.T, c prometheus.Collector) []*dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric, 1024)
	c.Collect(ch)
	close(ch)
	var out []*dto.Metric
	for m := range ch {
		pb := &dto.Metric{}
		if err := m.Write(pb); err != nil {
			t.Fatalf("writing metric: %v", err)
		}
		out = append(out, pb)
	}
	return out
}

// toFloat64 is the value of the one gauge or counter c exports.
func toFloat64(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ms := collect(t, c)
	if len(ms) != 1 {
		t.Fatalf("collected %d metrics, want 1", len(ms))
	}
	switch m := ms[0]; {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	default:
		t.Fatalf("not a gauge or counter: %v", m)
		return 0
	}
}

// countSeries is how many series c exports.
func countSeries(t *testing.T, c prometheus.Collector) int {
	t.Helper()
	return len(collect(t, c))
}

// gatherText renders the named families of g in the Prometheus text format:
// families by name, series by label values, as a scrape shows them.
func gatherText(t *testing.T, g prometheus.Gatherer, names ...string) string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if slices.Contains(names, f.GetName()) {
			if err := enc.Encode(f); err != nil {
				t.Fatalf("encode: %v", err)
			}
		}
	}
	return buf.String()
}

// compareText fails the test unless got equals want, ignoring leading and
// trailing blank lines.
func compareText(t *testing.T, got, want string) {
	t.Helper()
	if strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("metrics differ\n--- got\n%s\n--- want\n%s", got, want)
	}
}

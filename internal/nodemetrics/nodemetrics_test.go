package nodemetrics

import (
	"encoding/json"
	"math/big"
	"os"
	"regexp"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func names(t *testing.T, m *Metrics) map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc, 100)
	m.Describe(ch)
	close(ch)
	out := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		out[fq.FindStringSubmatch(d.String())[1]] = true
	}
	return out
}

// The Grafana dashboard graphs only metrics the node exports, and every one of them.
func TestDashboardGraphsEveryMetric(t *testing.T) {
	m := New(func() (Snapshot, error) { return Snapshot{}, nil })
	have := names(t, m)
	raw, err := os.ReadFile("../../docs/grafana/flops.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	graphed := map[string]bool{}
	re := regexp.MustCompile(`flops_[a-z_]+`)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			for _, n := range re.FindAllString(tg.Expr, -1) {
				require.Truef(t, have[n], "panel %q graphs %s, which the node does not export", p.Title, n)
				graphed[n] = true
			}
		}
	}
	for n := range have {
		if n != "flops_blocks_observed_total" {
			require.Truef(t, graphed[n], "%s is exported but on no panel", n)
		}
	}
}

// The counters count a block's events, and only those of transactions that succeeded.
func TestObserveBlockCountsEvents(t *testing.T) {
	m := New(func() (Snapshot, error) {
		return Snapshot{Jobs: map[string]uint64{"JOB_STATUS_ACTIVE": 3}, EscrowUdps: big.NewInt(7)}, nil
	})
	ev := func(typ string, kv ...string) abci.Event {
		e := abci.Event{Type: typ}
		for i := 0; i < len(kv); i += 2 {
			e.Attributes = append(e.Attributes, abci.EventAttribute{Key: kv[i], Value: kv[i+1]})
		}
		return e
	}
	m.ObserveBlock(&abci.ResponseFinalizeBlock{
		Events: []abci.Event{
			ev("flops.market.v1.EventTaskAssigned", "task_id", `"1"`),
			ev("flops.market.v1.EventTaskSettled", "paid", `"250"`),
			ev("flops.dps.v1.EventRewardPaid", "kind", `"availability"`, "amount", `"1000"`),
			ev("flops.stakingslash.v1.EventSlash", "record", `{"reason":"SLASH_REASON_WRONG_RESULT","amount":"40"}`),
			ev("flops.blockhook.v1.EventItemFailed", "module", `"market"`, "kind", `"settle"`),
			ev("flops.market.v1.EventTaskStatus", "status", `"TASK_STATUS_FAILED"`),
		},
		TxResults: []*abci.ExecTxResult{
			{Code: 0, Events: []abci.Event{ev("flops.market.v1.EventJobSubmitted"), ev("flops.market.v1.EventTaskAssigned")}},
			{Code: 5, Events: []abci.Event{ev("flops.market.v1.EventJobSubmitted")}},
		},
	})
	require.Equal(t, 2.0, testutil.ToFloat64(m.tasksAssigned))
	require.Equal(t, 2.0, testutil.ToFloat64(m.assignedLast))
	require.Equal(t, 1.0, testutil.ToFloat64(m.jobsSubmitted), "the failed tx's event is not counted")
	require.Equal(t, 250.0, testutil.ToFloat64(m.paid))
	require.Equal(t, 1000.0, testutil.ToFloat64(m.emission.WithLabelValues("availability")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.slashes.WithLabelValues("SLASH_REASON_WRONG_RESULT")))
	require.Equal(t, 40.0, testutil.ToFloat64(m.slashed))
	require.Equal(t, 1.0, testutil.ToFloat64(m.blockhookFailed.WithLabelValues("market", "settle")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.tasksFailed))

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	_, err := reg.Gather()
	require.NoError(t, err)
}

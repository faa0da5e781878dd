package agent_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/testutil/drandtest"
	"github.com/flopsnet/flops/worker/config"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// drandAPI serves a drand HTTP API for net (GET <base>/public/<round>) as of the app's
// block time: a round not published yet is "too early" (HTTP 425), as drand answers.
// sign gives the signature it serves (a lying API signs another round).
func drandAPI(t *testing.T, a *apptest.App, net *drandtest.Network, sign func(round uint64) []byte) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		_, tail, ok := strings.Cut(r.URL.Path, "/public/")
		round, err := strconv.ParseUint(tail, 10, 64)
		if !ok || err != nil {
			http.NotFound(w, r)
			return
		}
		if beacon.DrandRoundTime(net.Genesis, net.Period, round).After(a.BlockTime()) {
			http.Error(w, "Requested future beacon", http.StatusTooEarly)
			return
		}
		_, _ = fmt.Fprintf(w, `{"round":%d,"randomness":"00","signature":%q}`, round, hex.EncodeToString(sign(round)))
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

// With the chain's drand beacon on, the draws of a block wait for its round: a worker with
// beacon.drand_urls relays the rounds the chain awaits, taking each from the first API
// whose signature verifies (a lying API first in the list costs nothing), and a job runs
// to completion on draws from drand (wait_blocks is far beyond the test: nothing falls
// back).
func TestWorkerRelaysDrandRounds(t *testing.T) {
	net := drandtest.NewNetwork(t, apptest.GenesisTime.Unix()-3000, 3)
	a := apptest.New(t, apptest.WithAccounts("client", "p1"),
		apptest.WithGenesis(apptest.SmallPoCP(60_000_000_000)),
		apptest.WithGenesis(func(e apptest.GenesisEditor) {
			var g gfltypes.GenesisState
			e.Edit(gfltypes.ModuleName, &g, func() {
				g.Params.ChallengeIntervalBlocks = 1_000_000
				g.Params.Drand = gfltypes.DrandParams{PublicKey: net.PublicKey(), GenesisTime: net.Genesis, PeriodSeconds: net.Period, DelayRounds: 1, WaitBlocks: gfltypes.MaxDrandWaitBlocks}
			})
		}))
	liar, liarAsked := drandAPI(t, a, net, func(round uint64) []byte { return net.Sign(t, round+1) })
	good, goodAsked := drandAPI(t, a, net, func(round uint64) []byte { return net.Sign(t, round) })
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", func(c *config.Config) {
		c.Beacon.DrandURLs = []string{liar.URL + "/quicknet", good.URL + "/quicknet/"}
	})
	j := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_ASSIGN))
	q := markettypesQuery(a)
	until(t, a, 120, "job completed", func() bool {
		res, err := q.Job(context.Background(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
	}, w)

	tasks, err := q.TasksByJob(context.Background(), &markettypes.QueryTasksByJobRequest{JobId: j.Id})
	require.NoError(t, err)
	for _, tk := range tasks.Tasks {
		v, source, round, err := a.GFLKeeper.BeaconValue(a.Ctx(), tk.PendingHeight)
		require.NoError(t, err)
		require.Equal(t, "drand", source, "task %d was drawn from its block's round", tk.Id)
		r := net.Randomness(t, round)
		require.Equal(t, r[:], v)
	}
	require.Positive(t, liarAsked.Load())
	require.Positive(t, goodAsked.Load())
	pending, err := gfltypes.NewQueryClient(a.QueryConn()).PendingRounds(context.Background(), &gfltypes.QueryPendingRoundsRequest{})
	require.NoError(t, err)
	for _, br := range pending.Rounds {
		require.True(t, beacon.DrandRoundTime(net.Genesis, net.Period, br.Round).After(a.BlockTime().Add(-2*a.BlockInterval)),
			"round %d published at %s is still awaited at %s", br.Round, beacon.DrandRoundTime(net.Genesis, net.Period, br.Round), a.BlockTime())
	}
	a.AssertInvariants()
}

package keeper_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	corestore "cosmossdk.io/core/store"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// sameRecord must compare every field of a job's record (saveJob leaves a record it
// says is unchanged unwritten): each field but the spec (kept in JobSpecs) made to
// differ in turn makes the records differ. A field added to Job and not to sameRecord
// fails here.
func TestSameRecordComparesEveryField(t *testing.T) {
	base := types.Job{
		Id: 7, Owner: keepertest.Addr("owner"), Status: types.JOB_STATUS_ACTIVE, Escrow: sdkmath.NewInt(100),
		SubmittedHeight: 3, SubmittedTime: time.Unix(1_700_000_000, 0).UTC(), AuctionCloseHeight: 9,
		ClearingPrice: sdkmath.NewInt(5), TasksSettled: 1, TasksFailed: 1, FinishedHeight: 4, GemmSeed: []byte{1, 2},
		HistoryLen: 1, VerificationLeft: sdkmath.NewInt(8), OpenTasks: 2, RevealGas: 11, RevealCost: 12, FirstTaskId: 13,
	}
	require.True(t, keeper.SameRecordForTest(base, base))
	same := base
	same.Escrow, same.GemmSeed = sdkmath.NewInt(100), []byte{1, 2} // equal values, other objects
	same.Spec.TaskCount = 5                                        // not in the record
	require.True(t, keeper.SameRecordForTest(base, same))
	unset := base
	unset.ClearingPrice = sdkmath.Int{}
	zero := base
	zero.ClearingPrice = sdkmath.ZeroInt()
	require.True(t, keeper.SameRecordForTest(unset, zero), "an unset Int is zero")

	rt := reflect.TypeOf(base)
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Name == "Spec" {
			continue
		}
		other := base
		v := reflect.ValueOf(&other).Elem().Field(i)
		switch x := v.Addr().Interface().(type) {
		case *sdkmath.Int:
			*x = x.AddRaw(1)
		case *time.Time:
			*x = x.Add(time.Second)
		case *[]byte:
			*x = append([]byte{9}, *x...)
		case *string:
			*x += "x"
		default:
			switch v.Kind() {
			case reflect.Uint64, reflect.Uint32:
				v.SetUint(v.Uint() + 1)
			case reflect.Bool:
				v.SetBool(!v.Bool())
			case reflect.Int64, reflect.Int32:
				v.SetInt(v.Int() + 1)
			default:
				t.Fatalf("field %s: a %s; teach this test to change it", f.Name, f.Type)
			}
		}
		require.False(t, keeper.SameRecordForTest(base, other), "field %s differs", f.Name)
	}
}

// writeCounter is a store service that counts the writes under one key prefix.
type writeCounter struct {
	corestore.KVStoreService
	prefix []byte
	n      *int
}

func (w writeCounter) OpenKVStore(ctx context.Context) corestore.KVStore {
	return countingStore{w.KVStoreService.OpenKVStore(ctx), w}
}

type countingStore struct {
	corestore.KVStore
	w writeCounter
}

func (s countingStore) Set(k, v []byte) error {
	if len(k) >= len(s.w.prefix) && string(k[:len(s.w.prefix)]) == string(s.w.prefix) {
		*s.w.n++
	}
	return s.KVStore.Set(k, v)
}

// An assignment (or an ack, or any step that only adds a history entry) changes nothing of
// its job's record, so it does not rewrite it: the entry is counted in HistoryAdded. The
// history reads the same (the Job query's history_len is the whole length), and an
// export and import carries the count.
func TestAStepThatOnlyAddsHistoryLeavesTheJobRecordUnwritten(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("op"), 8, nil)
	id := f.submit(f.gemmSpec(2))
	record := f.job(id)
	require.Equal(t, uint32(1), record.HistoryLen, "entry 0, the submission, is implied")

	writes := 0
	f.k = keeper.NewKeeper(f.env.Codec, writeCounter{f.env.StoreService, types.JobsKey, &writes}, f.env.TransientService, f.env.AddressCodec, f.env.Authority,
		&keepertest.AccountKeeper{}, f.bank, f.gfl, f.coll, "fee_collector", "dps")
	f.k.SetReputation(f.rep)
	f.k.SetHooks(f.hooks)
	f.ms = keeper.NewMsgServerImpl(f.k)
	f.next(time.Second)
	for _, task := range f.tasks(id) {
		require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	}
	require.Zero(t, writes, "two assignments wrote the job's record")
	require.Equal(t, record, f.job(id))
	added, err := f.k.HistoryAdded.Get(f.ctx, id)
	require.NoError(t, err)
	require.Equal(t, uint32(2), added)

	qs := keeper.NewQueryServerImpl(f.k)
	shown, err := qs.Job(f.ctx, &types.QueryJobRequest{JobId: id})
	require.NoError(t, err)
	require.Equal(t, uint32(3), shown.Job.HistoryLen)
	hist, err := qs.JobHistory(f.ctx, &types.QueryJobHistoryRequest{JobId: id})
	require.NoError(t, err)
	require.Len(t, hist.Entries, 3)
	require.Equal(t, []string{"JobSubmitted", "TaskAssigned", "TaskAssigned"},
		[]string{hist.Entries[0].Event, hist.Entries[1].Event, hist.Entries[2].Event})

	// a step that changes the job (the cancel) writes it, its history entry counted the same way
	_, err = f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: id})
	require.NoError(t, err)
	require.Positive(t, writes)
	hist, err = qs.JobHistory(f.ctx, &types.QueryJobHistoryRequest{JobId: id})
	require.NoError(t, err)
	require.Equal(t, "JobCancelled", hist.Entries[3].Event)

	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, gs.Validate())
	g := newFixture(t, nil)
	g.bank.FundModule(types.ModuleName, sdk.NewCoins(sdk.NewCoin(udps, f.bank.ModuleBalance(types.ModuleName, udps))))
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	want, err := f.k.HistoryAdded.Get(f.ctx, id)
	require.NoError(t, err)
	got, err := g.k.HistoryAdded.Get(g.ctx, id)
	require.NoError(t, err)
	require.Equal(t, want, got, "the import counts the entries beyond the record's as added")
	require.Equal(t, f.job(id).HistoryLen, g.job(id).HistoryLen)
}

// A job whose record counted its whole history (written before HistoryAdded) goes on
// from there: its next entry follows its last, and the count is the record's and the
// entries added since.
func TestAHistoryCountedInTheRecordGoesOnFromIt(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("op"), 8, nil)
	id := f.submit(f.gemmSpec(1))
	// the record as the chain wrote it before: history_len 4, entries 1 to 3 stored
	legacy := f.job(id)
	legacy.HistoryLen = 4
	legacy.Spec = types.JobSpec{}
	require.NoError(t, f.k.Jobs.Set(f.ctx, id, legacy))
	for seq := uint32(1); seq < 4; seq++ {
		require.NoError(t, f.k.History.Set(f.ctx, collections.Join(id, seq), types.HistoryEntry{Event: "Old"}))
	}
	f.next(time.Second) // assigned: entry 4
	e, err := f.k.History.Get(f.ctx, collections.Join(id, uint32(4)))
	require.NoError(t, err)
	require.Equal(t, "TaskAssigned", e.Event)
	shown, err := keeper.NewQueryServerImpl(f.k).Job(f.ctx, &types.QueryJobRequest{JobId: id})
	require.NoError(t, err)
	require.Equal(t, uint32(5), shown.Job.HistoryLen)
}

// A job submitted in the block being executed reads its history count from the block's
// transient store (historyAdded). Its entries added in that block (by a message and by
// the EndBlock) and in the blocks after follow one another without overwriting one, the
// committed count agrees with the stored entries, and a query (which runs at the last
// committed height, outside a block) sees the whole history.
func TestAFreshJobsHistoryFollowsOn(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("op"), 8, nil)
	f.next(time.Second)
	h := f.ctx.BlockHeight()
	// block h: a job of two tasks, and one cancelled by its owner in the same block
	id := f.submit(f.gemmSpec(2))
	cancelled := f.submit(f.gemmSpec(1))
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: cancelled})
	require.NoError(t, err)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	for _, task := range f.tasks(id) {
		require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	}
	events := func(ctx sdk.Context, job uint64) []string {
		hist, err := keeper.NewQueryServerImpl(f.k).JobHistory(ctx, &types.QueryJobHistoryRequest{JobId: job})
		require.NoError(t, err)
		var out []string
		for _, e := range hist.Entries {
			out = append(out, e.Event)
		}
		shown, err := keeper.NewQueryServerImpl(f.k).Job(ctx, &types.QueryJobRequest{JobId: job})
		require.NoError(t, err)
		require.Equal(t, uint32(len(out)), shown.Job.HistoryLen, "job %d", job)
		return out
	}
	// stored entries 1..n, n the committed count (and the block's transient copy while
	// the block runs)
	requireCounted := func(job uint64, n uint32) {
		t.Helper()
		added, err := f.k.HistoryAdded.Get(f.ctx, job)
		require.NoError(t, err)
		require.Equal(t, n, added, "job %d", job)
		for seq := uint32(1); seq <= n+1; seq++ {
			has, err := f.k.History.Has(f.ctx, collections.Join(job, seq))
			require.NoError(t, err)
			require.Equal(t, seq <= n, has, "job %d entry %d", job, seq)
		}
	}
	query := f.ctx.WithExecMode(sdk.ExecModeCheck)
	require.Equal(t, []string{"JobSubmitted", "TaskAssigned", "TaskAssigned"}, events(query, id))
	require.Equal(t, "JobCancelled", events(query, cancelled)[1])
	requireCounted(id, 2)
	requireCounted(cancelled, uint32(len(events(query, cancelled))-1))

	// block h+1: the job is no longer fresh; its count comes from the committed state
	f.commitStore()
	f.ctx = f.ctx.WithBlockHeight(h + 1).WithBlockTime(f.ctx.BlockTime().Add(time.Second)).
		WithHeaderHash(blockHash(h + 1)).WithEventManager(sdk.NewEventManager())
	_, err = f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: id})
	require.NoError(t, err)
	after := events(f.ctx.WithExecMode(sdk.ExecModeCheck), id)
	require.Equal(t, []string{"JobSubmitted", "TaskAssigned", "TaskAssigned", "JobCancelled", "TaskCancelled", "TaskCancelled", "JobCancelled"}, after)
	requireCounted(id, uint32(len(after)-1))
}

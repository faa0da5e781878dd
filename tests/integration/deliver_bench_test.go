package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// deliverApp is the app BenchmarkDeliverBlock and TestSubmissionCommittedKeys run on: a
// "client" and a "bob", and 16 providers with an 8-GPU node each (128 free GPUs).
func deliverApp(tb testing.TB) *apptest.App {
	names := []string{"client", "bob"}
	for i := 1; i <= 16; i++ {
		names = append(names, fmt.Sprintf("p%d", i))
	}
	a := apptest.New(tb, apptest.WithAccounts(names...))
	for _, p := range names[2:] {
		bondAndRegister(tb, a, p, 8)
	}
	a.NextBlock()
	return a
}

// signedBlock is n txs of msg signed ahead from "client", at its next sequences.
func signedBlock(a *apptest.App, n int, msg func(a *apptest.App) sdk.Msg) [][]byte {
	block := make([][]byte, n)
	seq := a.AccountKeeper.GetAccount(a.Ctx(), a.Account("client").Address).GetSequence()
	for i := range block {
		block[i] = a.SignTxSeq("client", seq+uint64(i), 400_000, msg(a))
	}
	return block
}

// BenchmarkDeliverBlock: the time of one FinalizeBlock + Commit of a block of 100 txs
// signed ahead from one account, bank MsgSends next to one-task MsgSubmitJobs that the
// block's EndBlock assigns (deliverApp). This is the chain's side of make load's
// submit-job/bank-send ratio, without CometBFT, CheckTx, the mempool or the network: ns/tx
// of submit-job over ns/tx of bank-send is the CPU a submission costs the validator. Each
// iteration runs on a fresh app (the nodes would fill up otherwise); building it is
// outside the timer.
func BenchmarkDeliverBlock(b *testing.B) {
	const txs = 100
	for _, c := range benchTxKinds {
		b.Run(c.name, func(b *testing.B) {
			var assigned int
			for b.Loop() {
				b.StopTimer()
				a := deliverApp(b)
				block := signedBlock(a, txs, c.msg)
				b.StartTimer()
				res := a.NextBlock(block...)
				b.StopTimer()
				for i, r := range res.TxResults {
					if r.Code != 0 {
						b.Fatalf("tx %d: %s", i, r.Log)
					}
				}
				assigned = len(a.Events("flops.market.v1.EventTaskAssigned"))
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/txs, "ns/tx")
			if c.name == "submit-job" && assigned != txs {
				b.Fatalf("%d of %d tasks assigned in the block", assigned, txs)
			}
		})
	}
}

// TestSubmissionCommittedKeys holds a one-task submission, assigned in its inclusion
// block, to the keys it leaves written in the committed state: 100 submissions in one
// block (deliverApp), every key of every store compared before and after. Each such key
// is an IAVL write, hashed at the block's end and saved at its commit: in make load, a
// submission's Commit takes 0.1-0.2 ms of the validator's serial ABCI path where a bank
// send's takes 0.01-0.02 (a send between the same accounts rewrites the same few keys
// all block). A change that leaves one more key per submission fails here,
// deterministically, where a timing could not, and is a decision to make on purpose.
// Keys do not cost alike: one at a random place in the tree (an entry keyed by node or
// by owner) dirties a path of its own, while one the block writes in id order next to
// its other new keys shares theirs (README, make load: leaving out the tasks-by-node
// entry gained in a throwaway's pairs; writing the one index entry left in task order,
// store version 8, and folding away the job's history counter did not).
//
// Per submission: the job, its spec and its owner, status and deadline index entries;
// the task and its (provider, node) index entry (two entries, by node and by provider,
// until store version 7), its ack deadline; the history entry
// of the assignment and the job's history counter. The block's own (n % 100): the
// client's balance and sequence, the escrow, the 16 nodes' slots and load index
// entries, the class counter, the id counters.
func TestSubmissionCommittedKeys(t *testing.T) {
	const txs = 100
	a := deliverApp(t)
	before := a.Height()
	res := a.NextBlock(signedBlock(a, txs, benchTxKinds[1].msg)...)
	for i, r := range res.TxResults {
		require.Zero(t, r.Code, "tx %d: %s", i, r.Log)
	}
	require.Len(t, a.Events("flops.market.v1.EventTaskAssigned"), txs, "every task assigned in its inclusion block")

	market := map[byte]string{}
	for _, c := range []struct {
		name   string
		prefix []byte
	}{
		{"jobs", markettypes.JobsKey}, {"jobs by owner", markettypes.JobsByOwnerKey}, {"jobs by status", markettypes.JobsByStatusKey},
		{"job specs", markettypes.JobSpecsKey}, {"job deadlines", markettypes.JobDeadlinesKey}, {"tasks", markettypes.TasksKey},
		{"tasks by provider and node", markettypes.TasksByProviderNodeKey},
		{"ack deadlines", markettypes.AckDeadlinesKey}, {"history", markettypes.HistoryKey}, {"history added", markettypes.HistoryAddedKey},
	} {
		market[c.prefix[0]] = c.name
	}
	// every committed store at the height before the block and now: a key new, changed
	// or deleted is in diffA once or twice (DiffKVStores lists a changed one twice)
	old, err := a.CommitMultiStore().CacheMultiStoreWithVersion(before)
	require.NoError(t, err)
	ctx := a.Ctx()
	changed := map[string]int{}
	for name, key := range a.CommitMultiStore().(interface {
		StoreKeysByName() map[string]storetypes.StoreKey
	}).StoreKeysByName() {
		kvKey, ok := key.(*storetypes.KVStoreKey)
		if !ok {
			continue // transient and memory stores are not committed
		}
		diffA, _ := simtestutil.DiffKVStores(old.GetKVStore(kvKey), ctx.KVStore(kvKey), nil)
		keys := map[string]bool{}
		for _, pair := range diffA {
			keys[string(pair.Key)] = true
		}
		for k := range keys {
			label := fmt.Sprintf("%s/%d", name, k[0])
			if n, ok := market[k[0]]; ok && name == markettypes.StoreKey {
				label = n
			}
			changed[label]++
		}
	}
	perSubmission, perBlock, total := map[string]int{}, 0, 0
	for name, n := range changed {
		if n/txs > 0 {
			perSubmission[name] = n / txs
		}
		perBlock += n % txs
		total += n
	}
	t.Logf("keys written to the committed state: %.2f per submission (%d in the block, %d of them the block's own)", float64(total)/txs, total, perBlock)
	require.Equal(t, map[string]int{
		"jobs": 1, "jobs by owner": 1, "jobs by status": 1, "job specs": 1, "job deadlines": 1,
		"tasks": 1, "tasks by provider and node": 1, "ack deadlines": 1, "history": 1, "history added": 1,
	}, perSubmission, "keys per submission")
	require.LessOrEqual(t, perBlock, 80, "the block's own keys")
}

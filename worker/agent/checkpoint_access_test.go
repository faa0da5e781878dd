package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"

	"github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/testutil/testdirs"
	"github.com/flopsnet/flops/worker/agent"
	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/outputs"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

func bech(t *testing.T, k cryptotypes.PrivKey) string {
	a, err := bech32.ConvertAndEncode(chain.Bech32Prefix, k.PubKey().Address())
	require.NoError(t, err)
	return a
}

// A stranger reads a task's checkpoint (a model's weights, midway) off the provider that
// published it: the checkpoint's digest and URI are on chain for anyone to read, and the
// output server handed the file to whoever asked by its digest, unsigned, while the same
// task's outputs went only to its owner. A checkpoint is now served only to the owner of
// a task that published it and to the provider the chain has that task with now, each
// request signed: the successor resumes from it (its worker signs the fetch with its
// operator key), the previous provider once the task has moved on, a stranger and an
// unsigned request do not, and a worker refused the checkpoint starts the task from the
// beginning (da79a7b).
func TestAttackStrangerReadsATasksCheckpoint(t *testing.T) {
	dir := t.TempDir()
	owner, first, successor, stranger := secp256k1.GenPrivKey(), secp256k1.GenPrivKey(), secp256k1.GenPrivKey(), secp256k1.GenPrivKey()
	state := []byte("model weights after epoch 3")
	sum := sha256.Sum256(state)
	digest := hex.EncodeToString(sum[:])
	ckpt := filepath.Join(dir, "task", "checkpoint", "epoch3.bin")
	require.NoError(t, os.MkdirAll(filepath.Dir(ckpt), 0o755))
	require.NoError(t, os.WriteFile(ckpt, state, 0o644))

	store, err := outputs.Open(filepath.Join(dir, "outputs"))
	require.NoError(t, err)
	var mu sync.Mutex
	provider := bech(t, first) // the chain's provider of task 5 now
	providerLookups := 0
	clock := time.Now()
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	later := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(d)
	}
	published := filepath.Join(dir, "published")
	srv := httptest.NewServer(outputs.Handler(store, func(_ context.Context, id uint64) (string, error) {
		if id != 5 {
			return "", outputs.ErrTaskNotFound
		}
		return bech(t, owner), nil
	}, now, outputs.WithCheckpoints(published, func(_ context.Context, id uint64) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		providerLookups++
		return provider, nil
	})))
	t.Cleanup(srv.Close)
	pub := &agent.LocalPublisher{Store: store, BaseURL: srv.URL, Dir: published}
	uri, err := pub.PublishCheckpoint(context.Background(), 5, executor.Checkpoint{SHA256: digest, Path: ckpt})
	require.NoError(t, err)
	require.Equal(t, srv.URL+"/v1/checkpoints/"+digest, uri)

	get := func(key cryptotypes.PrivKey) (int, string) {
		req, err := http.NewRequest(http.MethodGet, uri, nil)
		require.NoError(t, err)
		if key != nil {
			require.NoError(t, outputs.SignRequest(req, key, now()))
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, _ := get(nil)
	require.Equal(t, http.StatusUnauthorized, status, "unsigned")
	status, body := get(stranger)
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, "neither the owner nor the provider")
	// a stranger's flood costs the chain node one lookup a second
	for range 100 {
		status, _ = get(secp256k1.GenPrivKey())
		require.Equal(t, http.StatusServiceUnavailable, status)
	}
	require.Equal(t, 1, providerLookups, "the task's provider looked up once within the second")
	status, body = get(owner)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, string(state), body)
	status, _ = get(first)
	require.Equal(t, http.StatusOK, status, "the provider running the task")
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/checkpoints/"+hex.EncodeToString(make([]byte, 32)), nil)
	require.NoError(t, err)
	require.NoError(t, outputs.SignRequest(req, owner, now()))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a checkpoint not held here")

	// the task moves to another node: its new provider resumes from the checkpoint, signing
	// the fetch as its worker does; the one it left and a stranger get nothing
	mu.Lock()
	provider = bech(t, successor)
	mu.Unlock()
	status, _ = get(successor)
	require.Equal(t, http.StatusServiceUnavailable, status, "the provider looked up within the second was another: ask again")
	later(2 * time.Second)
	status, _ = get(first)
	require.Equal(t, http.StatusForbidden, status, "the provider the task left")
	later(2 * time.Second)
	run := func(signer cryptotypes.PrivKey) []byte {
		o := executor.Options{WorkDir: filepath.Join(testdirs.Reachable(t, t.TempDir()), "work")}
		if signer != nil {
			o.SignCheckpointFetch = func(req *http.Request) error { return outputs.SignRequest(req, signer, now()) }
		}
		e, err := executor.New(o)
		require.NoError(t, err)
		res, err := e.Run(context.Background(), executor.Spec{TaskID: 5, JobID: 1, Runtime: markettypes.RUNTIME_PROCESS,
			Command: []string{"/bin/sh", "-c", `cat "$FLOPS_CHECKPOINT_DIR"/* > "$FLOPS_OUTPUT_DIR/resumed" 2>/dev/null; true`},
			Resume:  &executor.Checkpoint{SHA256: digest, URI: uri}}, executor.Hooks{})
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(res.OutputDir, "resumed"))
		require.NoError(t, err)
		return b
	}
	require.Equal(t, state, run(successor), "the successor resumed from the checkpoint")
	require.Empty(t, run(stranger), "a stranger's worker starts from the beginning")
	require.Empty(t, run(nil), "so does an unsigned fetch")
}

// Replicas of one job on the same machine publish the same checkpoint at the same moment:
// each publication succeeds, the file served is the checkpoint whole (the writers shared
// one temporary file: one could rename it while the other had just truncated it), and
// every task is listed, so each owner may read it.
func TestReplicasPublishTheSameCheckpointAtOnce(t *testing.T) {
	dir := t.TempDir()
	state := make([]byte, 4<<20)
	for i := range state {
		state[i] = byte(i * 7)
	}
	sum := sha256.Sum256(state)
	digest := hex.EncodeToString(sum[:])
	store, err := outputs.Open(filepath.Join(dir, "outputs"))
	require.NoError(t, err)
	published := filepath.Join(dir, "published")
	pub := &agent.LocalPublisher{Store: store, BaseURL: "http://worker.example", Dir: published}
	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for id := range uint64(n) {
		ckpt := filepath.Join(dir, "task", "checkpoint", digest[:8]+"-"+string(rune('a'+id)))
		require.NoError(t, os.MkdirAll(filepath.Dir(ckpt), 0o755))
		require.NoError(t, os.WriteFile(ckpt, state, 0o644))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pub.PublishCheckpoint(context.Background(), id+1, executor.Checkpoint{SHA256: digest, Path: ckpt})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := os.ReadFile(filepath.Join(published, digest))
	require.NoError(t, err)
	require.Equal(t, sum, sha256.Sum256(got), "the published file is the checkpoint whole")
	require.Len(t, outputs.CheckpointTasks(published, digest), n)
	entries, err := os.ReadDir(published)
	require.NoError(t, err)
	require.Len(t, entries, 2, "the checkpoint and its list; no temporary file left")
}

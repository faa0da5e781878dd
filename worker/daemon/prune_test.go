package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/outputs"
)

// The daemon forgets stored outputs and published checkpoints past outputs.retention at
// start and then every interval; a retention of 0 keeps them for good.
func TestPruneOutputsKeepsTheRetention(t *testing.T) {
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "r.txt"), []byte("result"), 0o644))
	files, logs, err := executor.HashOutputs(context.Background(), out, nil)
	require.NoError(t, err)
	root, err := executor.ManifestRoot(files)
	require.NoError(t, err)
	dir := t.TempDir()
	store, err := outputs.Open(dir)
	require.NoError(t, err)
	for _, id := range []uint64{1, 2} {
		_, err = store.Put(context.Background(), id, executor.Result{Root: root, OutputDir: out, Files: files, Logs: logs})
		require.NoError(t, err)
	}
	old := time.Now().Add(-10 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "tasks", "1.json"), old, old))
	log := slog.New(slog.DiscardHandler)
	ckpts := t.TempDir()
	for _, name := range []string{"old", "new"} {
		require.NoError(t, os.WriteFile(filepath.Join(ckpts, name), []byte(name), 0o600))
	}
	require.NoError(t, os.Chtimes(filepath.Join(ckpts, "old"), old, old))

	pruneOutputs(context.Background(), store, ckpts, 0, time.Millisecond, log) // returns at once
	_, err = store.Manifest(1)
	require.NoError(t, err, "retention 0 keeps them")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	pruneOutputs(ctx, store, ckpts, 7*24*time.Hour, 10*time.Millisecond, log)
	_, err = store.Manifest(1)
	require.ErrorIs(t, err, outputs.ErrNotFound, "10 days old, past 7")
	_, err = store.Manifest(2)
	require.NoError(t, err)
	require.NoFileExists(t, filepath.Join(ckpts, "old"), "a checkpoint published 10 days ago")
	require.FileExists(t, filepath.Join(ckpts, "new"))
}

package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/outputs"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// LocalPublisher keeps outputs in the machine's output store (served to each job's owner
// by the output server) and checkpoints as content-addressed files: served by this
// machine at /v1/checkpoints/<sha256>, and uploaded to UploadURL when one is set, so that
// the node that takes a task over can resume it even when this machine is gone.
//
// The output server serves a checkpoint only to the owner of a task that published it and
// to the provider the chain has that task with now (outputs.WithCheckpoints), each
// request signed; the tasks are recorded beside the file (outputs.RecordCheckpoint). A
// checkpoint uploaded to UploadURL is that store's to guard.
type LocalPublisher struct {
	Store *outputs.Store
	// BaseURL is the output server's public URL (node.endpoint).
	BaseURL string
	// Dir keeps the checkpoint files.
	Dir string
	// UploadURL (optional): checkpoints are PUT to UploadURL/<sha256> and recorded there.
	UploadURL string
	HTTP      *http.Client
}

var _ Publisher = (*LocalPublisher)(nil)

// PublishOutputs implements Publisher.
func (p *LocalPublisher) PublishOutputs(ctx context.Context, taskID uint64, _ string, res executor.Result) (string, error) {
	// A GEMM task's result root is the pocp root of its product (verified on chain by
	// sampling), not the manifest root of its one file; the manifest carries both.
	if _, err := p.Store.Put(ctx, taskID, res); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/v1/tasks/%d/outputs", strings.TrimRight(p.BaseURL, "/"), taskID), nil
}

// PublishCheckpoint implements Publisher.
func (p *LocalPublisher) PublishCheckpoint(ctx context.Context, taskID uint64, cp executor.Checkpoint) (string, error) {
	if err := markettypes.ValidateSHA256Hex(cp.SHA256); err != nil {
		return "", fmt.Errorf("checkpoint digest: %w", err)
	}
	// The task wrote the file and may have swapped it for a link to one of the worker's
	// files since it was hashed: it is opened as a task's file, and checked again.
	f, err := executor.OpenTaskFile(cp.Path)
	if err != nil {
		return "", err
	}
	bz, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return "", err
	}
	if sum := sha256.Sum256(bz); hex.EncodeToString(sum[:]) != cp.SHA256 {
		return "", errors.New("checkpoint changed while it was published")
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return "", err
	}
	if err := outputs.WriteFileAtomic(filepath.Join(p.Dir, cp.SHA256), bz); err != nil {
		return "", err
	}
	if err := outputs.RecordCheckpoint(p.Dir, cp.SHA256, taskID); err != nil {
		return "", err
	}
	if p.UploadURL == "" {
		return fmt.Sprintf("%s/v1/checkpoints/%s", strings.TrimRight(p.BaseURL, "/"), cp.SHA256), nil
	}
	u := fmt.Sprintf("%s/%s", strings.TrimRight(p.UploadURL, "/"), cp.SHA256)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(bz))
	if err != nil {
		return "", err
	}
	client := p.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("upload checkpoint: %w", err)
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode/100 != 2 {
		return "", fmt.Errorf("upload checkpoint: %s", res.Status)
	}
	return u, nil
}

// CheckpointHandler serves content-addressed files from dir to anyone: GET /<sha256>
// returns the file, and, when writable, PUT /<sha256> stores a body whose sha256 is its
// name. It is a minimal checkpoint store for Outputs.CheckpointUploadURL (tests, demos);
// the output server serves a node's own checkpoints signed (outputs.WithCheckpoints).
func CheckpointHandler(dir string, writable bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if markettypes.ValidateSHA256Hex(name) != nil {
			http.Error(w, "not a sha256", http.StatusNotFound)
			return
		}
		path := filepath.Join(dir, name)
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			http.ServeFile(w, r, path)
		case http.MethodPut:
			if !writable {
				http.Error(w, "read only", http.StatusMethodNotAllowed)
				return
			}
			bz, err := io.ReadAll(io.LimitReader(r.Body, 16<<30))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if sum := sha256.Sum256(bz); hex.EncodeToString(sum[:]) != name {
				http.Error(w, "body does not hash to its name", http.StatusBadRequest)
				return
			}
			if err := os.MkdirAll(dir, 0o700); err != nil || os.WriteFile(path, bz, 0o600) != nil {
				http.Error(w, "cannot store", http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
		default:
			http.Error(w, "GET or PUT", http.StatusMethodNotAllowed)
		}
	})
}

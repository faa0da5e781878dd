package outputs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A published checkpoint is a file named by its sha256 in the checkpoint directory, with
// the tasks that published it listed beside it in <sha256>.tasks (decimal ids, one a
// line): a digest is on chain for anyone to read, and the tasks say whom its content
// belongs to.

// maxCheckpointTasks bounds the tasks listed for one checkpoint (the same content
// published by that many tasks: an empty or constant file).
const maxCheckpointTasks = 64

// recordMu keeps RecordCheckpoint's read, change and write of a list whole: a machine's
// tasks publish at once, replicas often the same content, and two writers of one list
// each dropped the other's task (its owner then refused its own checkpoint) or failed
// its publication on the other's rename.
var recordMu sync.Mutex

// RecordCheckpoint lists taskID among the tasks that published the checkpoint sha256 in
// dir (once; at most maxCheckpointTasks, the newest kept).
func RecordCheckpoint(dir, sha256 string, taskID uint64) error {
	if err := markettypes.ValidateSHA256Hex(sha256); err != nil {
		return fmt.Errorf("checkpoint digest: %w", err)
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	tasks := CheckpointTasks(dir, sha256)
	if slices.Contains(tasks, taskID) {
		return touch(checkpointTasksPath(dir, sha256))
	}
	tasks = append(tasks, taskID)
	if len(tasks) > maxCheckpointTasks {
		tasks = tasks[len(tasks)-maxCheckpointTasks:]
	}
	var b strings.Builder
	for _, id := range tasks {
		b.WriteString(strconv.FormatUint(id, 10))
		b.WriteByte('\n')
	}
	return WriteFileAtomic(checkpointTasksPath(dir, sha256), []byte(b.String()))
}

// WriteFileAtomic writes path whole or not at all (mode 0600), through a temporary file
// of its own beside it: a reader or a second writer of the same path never sees a part.
func WriteFileAtomic(path string, data []byte) error {
	return writeAtomic(filepath.Dir(path), filepath.Base(path)+".*.tmp", path, data, 0o600)
}

func touch(path string) error {
	now := time.Now()
	return os.Chtimes(path, now, now)
}

// CheckpointTasks are the tasks that published the checkpoint sha256 in dir (none when
// no record is there).
func CheckpointTasks(dir, sha256 string) []uint64 {
	if markettypes.ValidateSHA256Hex(sha256) != nil {
		return nil
	}
	b, err := os.ReadFile(checkpointTasksPath(dir, sha256))
	if err != nil {
		return nil
	}
	var tasks []uint64
	for _, line := range bytes.Split(b, []byte("\n")) {
		if id, err := strconv.ParseUint(string(line), 10, 64); err == nil && !slices.Contains(tasks, id) {
			tasks = append(tasks, id)
		}
	}
	return tasks
}

func checkpointTasksPath(dir, sha256 string) string { return filepath.Join(dir, sha256+".tasks") }

// WithCheckpoints serves the checkpoints published in dir at GET /v1/checkpoints/{sha256}
// to the owner of a task that published it and to the provider the chain has that task
// with now (providerOf, a chain query): the node that resumes the task. A checkpoint is a
// task's state (a model's weights, midway), as much its owner's as the outputs are, and
// its digest is on chain for anyone to read; served to whoever asked by it, it gave a
// stranger what the outputs' signatures keep from one. providerOf is asked only for a
// checkpoint held here, signed by someone who is not its owner, and at most once a
// providerFresh a task.
func WithCheckpoints(dir string, providerOf func(ctx context.Context, taskID uint64) (string, error)) Option {
	return func(h *handler) {
		h.checkpoints, h.providerOf = dir, providerOf
		h.providers, _ = lru.New[uint64, providerAnswer](OwnerCacheSize)
	}
}

func (h *handler) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	sha := r.PathValue("sha256")
	if markettypes.ValidateSHA256Hex(sha) != nil {
		writeError(w, http.StatusNotFound, "checkpoint %q: not a sha256 (64 lowercase hex characters)", sha)
		return
	}
	now := h.now()
	signer, signerText, nonce, err := authenticate(r, now, h.hosts, h.revocations)
	if err != nil {
		writeAuthError(w, err)
		return
	}
	path := filepath.Join(h.checkpoints, sha)
	tasks := CheckpointTasks(h.checkpoints, sha)
	if _, err := os.Stat(path); err != nil || len(tasks) == 0 {
		writeError(w, http.StatusNotFound, "checkpoint %s is not held here", sha)
		return
	}
	entitled, again, lookupErr := h.checkpointEntitled(r.Context(), signer, tasks, now)
	switch {
	case !entitled && again:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the provider of checkpoint %s's task was looked up within the last %s and was not %s: try again", sha, providerFresh, signerText)
		return
	case !entitled && lookupErr != nil:
		writeError(w, http.StatusServiceUnavailable, "cannot look up the tasks of checkpoint %s: %v", sha, lookupErr)
		return
	case !entitled:
		writeError(w, http.StatusForbidden, "%s is neither the owner nor the provider of a task that published checkpoint %s", signerText, sha)
		return
	}
	done, ok := h.admit(w, signerText, nonce, now)
	if !ok {
		return
	}
	defer done()
	f, err := os.Open(path)
	if err != nil {
		writeError(w, http.StatusNotFound, "checkpoint %s is not held here", sha)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "checkpoint %s: %v", sha, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// providerFresh is how long a task's provider, looked up for a checkpoint, is taken as
// it is: a stranger's flood of signed requests for a checkpoint held here costs a query
// to the chain node at most this often a task, and the node that has just been given the
// task, refused on an answer this fresh, is told to ask again (503, which the executor's
// fetch retries) rather than refused for good.
const providerFresh = time.Second

// providerAnswer is a task's provider as looked up at a time.
type providerAnswer struct {
	provider string
	at       time.Time
}

// checkpointEntitled says whether signer owns one of tasks or is the provider the chain
// has one of them with now; again, when it is not, whether a provider's answer fresher
// than providerFresh decided it (the signer may be the task's provider since); err is
// the last lookup that failed, if any.
func (h *handler) checkpointEntitled(ctx context.Context, signer []byte, tasks []uint64, now time.Time) (entitled, again bool, err error) {
	is := func(addr string) bool { return sameAccount(addr, signer) }
	var lastErr error
	for _, id := range tasks {
		owner, err := h.owner(ctx, id)
		if err == nil && is(owner) {
			return true, false, nil
		}
		if err != nil && !errors.Is(err, ErrTaskNotFound) {
			lastErr = err
		}
		if h.providerOf == nil {
			continue
		}
		if a, ok := h.providers.Get(id); ok && now.Sub(a.at) < providerFresh {
			if is(a.provider) {
				return true, false, nil
			}
			again = true
			continue
		}
		provider, err := h.providerOf(ctx, id)
		if err != nil {
			if !errors.Is(err, ErrTaskNotFound) {
				lastErr = err
			}
			continue
		}
		h.providers.Add(id, providerAnswer{provider: provider, at: now})
		if is(provider) {
			return true, false, nil
		}
	}
	return false, again, lastErr
}

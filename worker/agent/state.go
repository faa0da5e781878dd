package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// record is what the agent must not forget between a task's end and its reveal: the
// result root and the salt of its commitment. Written before the commitment is sent, so
// a restart can still reveal (or knows it cannot).
type record struct {
	// Kind is "task" (a job's task) or "unit" (a pool unit).
	Kind   string `json:"kind"`
	TaskID uint64 `json:"task_id,omitempty"`
	PoolID uint64 `json:"pool_id,omitempty"`
	UnitID uint64 `json:"unit_id,omitempty"`
	// Root and Salt open the commitment (hex).
	Root string `json:"root"`
	Salt string `json:"salt"`
	// OutputURI is where the owner fetches the outputs.
	OutputURI string            `json:"output_uri"`
	Usage     markettypes.Usage `json:"usage"`
	// Gemm: the reveal must open sampled entries of the product (recomputed after a
	// restart: it is deterministic).
	Gemm bool `json:"gemm,omitempty"`
}

func (r record) key() string {
	if r.Kind == "unit" {
		return fmt.Sprintf("unit-%d-%d", r.PoolID, r.UnitID)
	}
	return fmt.Sprintf("task-%d", r.TaskID)
}

// store keeps records as one JSON file each, written atomically.
type store struct {
	dir string
	mu  sync.Mutex
}

func newStore(dir string) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &store{dir: dir}, nil
}

func (s *store) path(key string) string { return filepath.Join(s.dir, key+".json") }

func (s *store) put(r record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	bz, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path(r.key()) + ".tmp"
	if err := os.WriteFile(tmp, bz, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path(r.key()))
}

func (s *store) get(key string) (record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bz, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, false, nil
	} else if err != nil {
		return record{}, false, err
	}
	var r record
	if err := json.Unmarshal(bz, &r); err != nil {
		return record{}, false, fmt.Errorf("state %s: %w", key, err)
	}
	return r, true, nil
}

func (s *store) del(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// keys lists the stored records' keys.
func (s *store) keys() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			out = append(out, name)
		}
	}
	return out, nil
}

func taskKey(id uint64) string { return "task-" + strconv.FormatUint(id, 10) }

func unitKey(pool, unit uint64) string { return fmt.Sprintf("unit-%d-%d", pool, unit) }

package executor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup2Magic is the statfs type of a cgroup v2 mount (CGROUP2_SUPER_MAGIC).
const cgroup2Magic = 0x63677270

// taskCgroup is the cgroup v2 of one task's run: a child of Sandbox.Cgroup holding the
// whole tree the task starts (placed in it at fork, CLONE_INTO_CGROUP), with the limits
// of the controllers the parent offers.
type taskCgroup struct {
	dir string
	fd  *os.File // the directory, for SysProcAttr.CgroupFD
}

// checkCgroup checks that dir is a cgroup v2 directory the worker can make children in.
func checkCgroup(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("%w: cgroup %s: %w", ErrNoSandbox, dir, err)
	}
	if st.Type != cgroup2Magic {
		return fmt.Errorf("%w: cgroup %s: not a cgroup v2 directory", ErrNoSandbox, dir)
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return fmt.Errorf("%w: cgroup %s: not writable (delegate it to the worker's user): %w", ErrNoSandbox, dir, err)
	}
	return nil
}

// newTaskCgroup makes a task's cgroup under parent and sets its limits: memory.max (and
// no swap), pids.max and cpu.max for the controllers the parent has or can enable;
// those it cannot are logged, the rlimits still apply.
func newTaskCgroup(log *slog.Logger, parent string, taskID uint64, memory, processes, cpus uint64) (*taskCgroup, error) {
	enableControllers(log, parent)
	var n [4]byte
	_, _ = rand.Read(n[:])
	dir := filepath.Join(parent, fmt.Sprintf("task-%d-%s", taskID, hex.EncodeToString(n[:])))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("task cgroup: %w", err)
	}
	limits := map[string]string{}
	if memory > 0 {
		limits["memory.max"] = strconv.FormatUint(memory, 10)
		limits["memory.swap.max"] = "0"
	}
	if processes > 0 {
		limits["pids.max"] = strconv.FormatUint(processes, 10)
	}
	if cpus > 0 {
		limits["cpu.max"] = strconv.FormatUint(cpus*100_000, 10) + " 100000"
	}
	for _, file := range []string{"memory.max", "memory.swap.max", "pids.max", "cpu.max"} {
		v, ok := limits[file]
		if !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil {
			log.Warn("task cgroup limit not set: the controller is not available here", "file", file, "err", err)
		}
	}
	fd, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("task cgroup: %w", err)
	}
	return &taskCgroup{dir: dir, fd: fd}, nil
}

// enableControllers turns on, for parent's children, the memory, pids and cpu controllers
// parent has.
func enableControllers(log *slog.Logger, parent string) {
	have, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil {
		return
	}
	var want []string
	for _, c := range strings.Fields(string(have)) {
		if c == "memory" || c == "pids" || c == "cpu" {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0); err != nil {
		log.Warn("cgroup controllers not enabled for the tasks", "cgroup", parent, "err", err)
	}
}

// killCgroup kills every process of a task's cgroup (cgroup.kill) and removes it once
// empty; a cgroup already gone is not an error.
func killCgroup(log *slog.Logger, dir string) {
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("kill task cgroup", "cgroup", dir, "err", err)
	}
	for range 100 {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.Warn("task cgroup not removed: processes remain", "cgroup", dir)
}

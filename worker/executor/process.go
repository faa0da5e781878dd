package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables every PROCESS and CONTAINER task gets (docs/workloads.md
// section 5). A job's own env cannot override them.
const (
	EnvTaskID             = "FLOPS_TASK_ID"
	EnvJobID              = "FLOPS_JOB_ID"
	EnvShardIndex         = "FLOPS_SHARD_INDEX"
	EnvInputDir           = "FLOPS_INPUT_DIR"
	EnvOutputDir          = "FLOPS_OUTPUT_DIR"
	EnvCheckpointDir      = "FLOPS_CHECKPOINT_DIR"
	EnvCUDAVisibleDevices = "CUDA_VISIBLE_DEVICES"
)

// passedEnv are the worker's variables a PROCESS task inherits; nothing else of the
// worker's environment (which may hold secrets) reaches a task.
var passedEnv = []string{"PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "TZ"}

// pipeGrace bounds the wait for a finished task's log pipes, which a process that left
// the task's process group may still hold.
const pipeGrace = 2 * time.Second

// command is what execute starts: argv in dir with exactly env, and stop, called once
// when the task is cancelled before its process group is signalled (a container
// runtime's "rm -f").
type command struct {
	argv []string
	dir  string
	env  []string
	stop func()
}

// envList is an ordered environment in which a later set replaces an earlier one.
type envList struct {
	names []string
	vals  map[string]string
}

func (l *envList) set(name, val string) {
	if l.vals == nil {
		l.vals = map[string]string{}
	}
	if _, ok := l.vals[name]; !ok {
		l.names = append(l.names, name)
	}
	l.vals[name] = val
}

func (l *envList) list() []string {
	out := make([]string, len(l.names))
	for x, n := range l.names {
		out[x] = n + "=" + l.vals[n]
	}
	return out
}

// reservedEnv reports whether the executor owns a variable name.
func reservedEnv(name string) bool {
	return strings.HasPrefix(name, "FLOPS_") || name == EnvCUDAVisibleDevices
}

// taskEnv is the job's env followed by the executor's variables, with dirs as the task
// sees them. A job variable with a reserved name is dropped with a warning.
func taskEnv(log *slog.Logger, spec Spec, base *envList, input, output, checkpoint string) *envList {
	env := base
	for _, e := range spec.Env {
		if reservedEnv(e.Name) {
			log.Warn("job env variable ignored: the executor sets it", "name", e.Name)
			continue
		}
		env.set(e.Name, e.Value)
	}
	env.set(EnvTaskID, strconv.FormatUint(spec.TaskID, 10))
	env.set(EnvJobID, strconv.FormatUint(spec.JobID, 10))
	env.set(EnvShardIndex, strconv.FormatUint(uint64(spec.Index), 10))
	env.set(EnvInputDir, input)
	env.set(EnvOutputDir, output)
	env.set(EnvCheckpointDir, checkpoint)
	env.set(EnvCUDAVisibleDevices, strings.Join(spec.GPUs, ","))
	return env
}

// processCommand is a PROCESS task: its command in the working directory, with HOME and
// TMPDIR in the task's tmp directory.
func (e *Executor) processCommand(spec Spec, d taskDirs) command {
	base := &envList{}
	for _, n := range passedEnv {
		if v, ok := os.LookupEnv(n); ok {
			base.set(n, v)
		}
	}
	base.set("HOME", d.tmp)
	base.set("TMPDIR", d.tmp)
	env := taskEnv(e.log, spec, base, d.work, d.output, d.checkpoint)
	return command{argv: slices.Clone(spec.Command), dir: d.work, env: env.list()}
}

// execute runs c in its own process group with stdout and stderr captured into
// LogDir of the output directory, watches the checkpoint directory, and on ctx's end
// sends SIGTERM to the group, then SIGKILL after KillGrace. Whatever the command leaves
// running in its group when it exits is killed. It returns nil on exit status 0, an
// *ExitError otherwise, or context.Cause(ctx) when the task was stopped.
func (e *Executor) execute(ctx context.Context, log *slog.Logger, c command, d taskDirs, hooks Hooks, resumed *Checkpoint) error {
	logDir := filepath.Join(d.output, LogDir)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	stdout, err := newLogCapture(filepath.Join(logDir, "stdout.log"), e.opts.MaxLogBytes)
	if err != nil {
		return err
	}
	stderr, err := newLogCapture(filepath.Join(logDir, "stderr.log"), e.opts.MaxLogBytes)
	if err != nil {
		stdout.Close()
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdout.Close()
		stderr.Close()
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		stdout.Close()
		stderr.Close()
		return err
	}

	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startErr := cmd.Start()
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		stdout.Close()
		stderr.Close()
		return fmt.Errorf("start %q: %w", c.argv[0], startErr)
	}
	pgid := cmd.Process.Pid
	log.Debug("task process started", "pid", pgid)

	var copiers sync.WaitGroup
	copiers.Go(func() { _, _ = io.Copy(stdout, outR) })
	copiers.Go(func() { _, _ = io.Copy(stderr, errR) })

	watcher := newCheckpointWatcher(d.checkpoint, hooks.Checkpoint, log, resumed)
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watching sync.WaitGroup
	if hooks.Checkpoint != nil {
		watching.Go(func() { watcher.poll(watchCtx, e.opts.CheckpointPoll) })
	}

	waited := make(chan error, 1)
	var waiting sync.WaitGroup
	waiting.Go(func() { waited <- cmd.Wait() })
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		log.Info("stopping task process group", "pgid", pgid, "cause", context.Cause(ctx))
		if c.stop != nil {
			c.stop()
		}
		signalGroup(log, pgid, syscall.SIGTERM)
		grace := time.NewTimer(e.opts.KillGrace)
		select {
		case waitErr = <-waited:
			grace.Stop()
		case <-grace.C:
			log.Warn("task process group outlived SIGTERM; killing it", "pgid", pgid, "grace", e.opts.KillGrace)
			signalGroup(log, pgid, syscall.SIGKILL)
			waitErr = <-waited
		}
	}
	waiting.Wait()
	signalGroup(log, pgid, syscall.SIGKILL) // what the command left running
	stopWatch()
	watching.Wait()

	copied := make(chan struct{})
	var closing sync.WaitGroup
	closing.Go(func() {
		copiers.Wait()
		close(copied)
	})
	grace := time.NewTimer(pipeGrace)
	select {
	case <-copied:
		grace.Stop()
	case <-grace.C:
		log.Warn("a process outside the task's group holds its output pipes; closing them")
		outR.Close()
		errR.Close()
	}
	closing.Wait()
	outR.Close()
	errR.Close()
	stdout.Close()
	stderr.Close()

	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if hooks.Checkpoint != nil {
		watcher.scan(ctx, true)
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return fmt.Errorf("task process: %w", waitErr)
		}
		xe := &ExitError{Code: ee.ExitCode(), Stderr: stderr.Tail()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			xe.Code, xe.Signal = -1, ws.Signal().String()
		}
		return xe
	}
	return nil
}

// signalGroup signals every process of a process group; a group that no longer exists
// is not an error.
func signalGroup(log *slog.Logger, pgid int, sig syscall.Signal) {
	if pgid <= 1 {
		return
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		log.Warn("signal task process group", "pgid", pgid, "signal", sig.String(), "err", err)
	}
}

// logCapture keeps the first and the last max/2 bytes of a stream in a file, with a
// line in between that says how much was left out. Write never fails, so that the
// task's pipe is always drained.
type logCapture struct {
	f       *os.File
	headMax int64
	head    int64
	total   int64
	ring    []byte // the last bytes past the head, once the head is full
	ringCap int
	ringPos int
	ringLen int
	last    []byte // the stream's last bytes, at most 2*tailMax
	tail    string
	err     error
}

// tailMax bounds the stream end an ExitError quotes.
const tailMax = 1024

func newLogCapture(p string, max int64) (*logCapture, error) {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("task log: %w", err)
	}
	return &logCapture{f: f, headMax: max - max/2, ringCap: int(max / 2)}, nil
}

func (l *logCapture) Write(p []byte) (int, error) {
	n := len(p)
	l.total += int64(n)
	l.last = append(l.last, p[max(0, len(p)-tailMax):]...)
	if len(l.last) > 2*tailMax {
		l.last = append(l.last[:0], l.last[len(l.last)-tailMax:]...)
	}
	if l.head < l.headMax {
		k := min(int64(len(p)), l.headMax-l.head)
		if _, err := l.f.Write(p[:k]); err != nil && l.err == nil {
			l.err = err
		}
		l.head += k
		p = p[k:]
	}
	if len(p) == 0 || l.ringCap == 0 {
		return n, nil
	}
	if l.ring == nil {
		l.ring = make([]byte, l.ringCap)
	}
	if len(p) >= l.ringCap {
		copy(l.ring, p[len(p)-l.ringCap:])
		l.ringPos, l.ringLen = 0, l.ringCap
		return n, nil
	}
	for len(p) > 0 {
		k := copy(l.ring[l.ringPos:], p)
		p = p[k:]
		l.ringPos = (l.ringPos + k) % l.ringCap
		l.ringLen = min(l.ringLen+k, l.ringCap)
	}
	return n, nil
}

// ringBytes is the tail in stream order.
func (l *logCapture) ringBytes() []byte {
	if l.ringLen < l.ringCap {
		return l.ring[:l.ringLen]
	}
	return append(slices.Clone(l.ring[l.ringPos:]), l.ring[:l.ringPos]...)
}

// Close writes the tail and closes the file.
func (l *logCapture) Close() {
	if l.f == nil {
		return
	}
	if l.ringLen > 0 {
		tail := l.ringBytes()
		if omitted := l.total - l.head - int64(len(tail)); omitted > 0 {
			_, _ = fmt.Fprintf(l.f, "\n[flops: %d bytes omitted]\n", omitted)
		}
		_, _ = l.f.Write(tail)
	}
	l.tail = strings.TrimSpace(string(l.last[max(0, len(l.last)-tailMax):]))
	l.f.Close()
	l.f = nil
}

// Tail is the end of the stream (at most 1 KiB), once closed.
func (l *logCapture) Tail() string { return l.tail }

// checkpointWatcher reports the checkpoints a task writes (docs/workloads.md section 7):
// at each scan, the newest file of the checkpoint directory that is complete and not yet
// reported. A file is complete when it is seen unchanged (size and modification time)
// at two scans in a row, or at the final scan after the task exits. Hidden files and
// names ending in .tmp or .partial are files in the making and never reported.
type checkpointWatcher struct {
	dir      string
	hook     func(Checkpoint)
	log      *slog.Logger
	seen     map[string]fileStamp // at the previous scan
	reported map[string]fileStamp
	lastSHA  string
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func newCheckpointWatcher(dir string, hook func(Checkpoint), log *slog.Logger, resumed *Checkpoint) *checkpointWatcher {
	w := &checkpointWatcher{dir: dir, hook: hook, log: log, seen: map[string]fileStamp{}, reported: map[string]fileStamp{}}
	if resumed != nil {
		if st, err := os.Lstat(resumed.Path); err == nil {
			w.reported[filepath.Base(resumed.Path)] = fileStamp{st.Size(), st.ModTime()}
		}
		w.lastSHA = resumed.SHA256
	}
	return w
}

func (w *checkpointWatcher) poll(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.scan(ctx, false)
		}
	}
}

func (w *checkpointWatcher) scan(ctx context.Context, final bool) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		w.log.Warn("checkpoint scan", "err", err)
		return
	}
	seen := make(map[string]fileStamp, len(entries))
	var best string
	var bestStamp fileStamp
	for _, de := range entries {
		name := de.Name()
		if !de.Type().IsRegular() || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".partial") {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		st := fileStamp{info.Size(), info.ModTime()}
		seen[name] = st
		prev, ok := w.seen[name]
		complete := final || (ok && prev == st)
		if !complete || w.reported[name] == st {
			continue
		}
		w.reported[name] = st // superseded if not the newest
		if best == "" || st.mod.After(bestStamp.mod) || (st.mod.Equal(bestStamp.mod) && name > best) {
			best, bestStamp = name, st
		}
	}
	w.seen = seen
	if best == "" {
		return
	}
	p := filepath.Join(w.dir, best)
	sha, err := hashFile(ctx, p)
	if err != nil {
		w.log.Warn("checkpoint hash", "file", best, "err", err)
		return
	}
	if sha == w.lastSHA {
		return
	}
	w.lastSHA = sha
	w.log.Info("checkpoint", "file", best, "sha256", sha, "bytes", bestStamp.size)
	w.hook(Checkpoint{SHA256: sha, Path: p})
}

package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables every PROCESS and CONTAINER task gets (docs/workloads.md
// section 5). A job's own env cannot override them. Each is the same in every run of a
// shard: a primary's, its replicas', its audit's and its committee's. A task id told a job
// which run it was, and a job that knows its verification runs can make them disagree with
// its primary at will and get an honest result overturned (x/market/README.md, Limits).
const (
	EnvJobID         = "FLOPS_JOB_ID"
	EnvShardIndex    = "FLOPS_SHARD_INDEX"
	EnvInputDir      = "FLOPS_INPUT_DIR"
	EnvOutputDir     = "FLOPS_OUTPUT_DIR"
	EnvCheckpointDir = "FLOPS_CHECKPOINT_DIR"
	// EnvCheckpointInterval is the job's checkpoint_interval in whole seconds (at least
	// 1), set only when the job asks for checkpoints.
	EnvCheckpointInterval = "FLOPS_CHECKPOINT_INTERVAL"
	// EnvProgressFile names a file (in LogDir of the output directory) whose last line
	// the task may rewrite or append to say how far it is; the worker carries it to the
	// chain in its heartbeats (at most markettypes.MaxProgressLen bytes).
	EnvProgressFile       = "FLOPS_PROGRESS_FILE"
	EnvCUDAVisibleDevices = "CUDA_VISIBLE_DEVICES"
)

// passedEnv are the worker's variables a PROCESS task inherits; nothing else of the
// worker's environment (which may hold secrets) reaches a task.
var passedEnv = []string{"PATH", "LD_LIBRARY_PATH", "LANG", "LC_ALL", "TZ"}

// wrapperScript runs a PROCESS or CONTAINER task's argv ("$@") and writes its exit
// status to the file named by $0, so that a worker that is not the process's parent
// (Adopt) learns how it ended. The wrapper leads the task's process group.
const wrapperScript = `"$@"; echo $? > "$0"`

// command is what execute starts: argv in dir with exactly env, and stop, called once
// when the task is cancelled before its process group is signalled (a container
// runtime's "rm -f"). container and runtime name a CONTAINER task's container and the
// runtime client, recorded so that a later start of the worker can stop it too.
type command struct {
	argv []string
	// look is the task's own command when argv wraps it (the sandbox): it is looked up
	// before the start, as exec would (lookCommand).
	look string
	// owned: the task runs as the sandbox's user, who must own its writable directories.
	owned bool
	// cgroup, if set, is the cgroup the command starts in (Sandbox.Cgroup).
	cgroup    *taskCgroup
	dir       string
	env       []string
	stop      func()
	container string
	runtime   string
	// image is a CONTAINER task's image, and fresh whether the runtime pulls it for the
	// task without holding it before: the image cache's.
	image string
	fresh bool
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
	env.set(EnvJobID, strconv.FormatUint(spec.JobID, 10))
	env.set(EnvShardIndex, strconv.FormatUint(uint64(spec.Index), 10))
	env.set(EnvInputDir, input)
	env.set(EnvOutputDir, output)
	env.set(EnvCheckpointDir, checkpoint)
	env.set(EnvProgressFile, path.Join(filepath.ToSlash(output), LogDir, progressFile))
	if spec.CheckpointInterval > 0 {
		env.set(EnvCheckpointInterval, strconv.FormatInt(int64(max(spec.CheckpointInterval/time.Second, 1)), 10))
	}
	env.set(EnvCUDAVisibleDevices, strings.Join(spec.GPUs, ","))
	return env
}

// processCommand is a PROCESS task: its command in the sandbox (Sandbox), with the task's
// directories at the container's paths and HOME and TMPDIR its own /tmp; or, with the
// sandbox off, in the working directory with HOME and TMPDIR in the task's tmp
// directory.
func (e *Executor) processCommand(spec Spec, d taskDirs) (command, error) {
	base := &envList{}
	for _, n := range passedEnv {
		if v, ok := os.LookupEnv(n); ok {
			base.set(n, v)
		}
	}
	if e.opts.Sandbox.Off {
		base.set("HOME", d.tmp)
		base.set("TMPDIR", d.tmp)
		env := taskEnv(e.log, spec, base, d.work, d.output, d.checkpoint)
		return command{argv: slices.Clone(spec.Command), dir: d.work, env: env.list()}, nil
	}
	base.set("HOME", SandboxTmpDir)
	base.set("TMPDIR", SandboxTmpDir)
	env := taskEnv(e.log, spec, base, ContainerInputDir, ContainerOutputDir, ContainerCheckpointDir)
	argv, err := e.sandboxed(spec, d, spec.Command)
	if err != nil {
		return command{}, err
	}
	c := command{argv: argv, look: spec.Command[0], dir: d.work, env: env.list(), owned: true}
	if sb := e.opts.Sandbox; sb.Cgroup != "" {
		gpus := uint64(max(len(spec.GPUs), 1))
		if c.cgroup, err = newTaskCgroup(e.log, sb.Cgroup, spec.TaskID, sb.MemoryPerGPU*gpus, sb.Processes, sb.CPUsPerGPU*gpus); err != nil {
			return command{}, err
		}
	}
	return c, nil
}

// execute runs c through the wrapper (wrapperScript) in its own process group, with
// stdout and stderr written straight to files in LogDir of the output directory (no
// pipe to the worker: the process outlives a worker that shuts down), records the run
// in the task directory (runRecord) and supervises it (supervise).
func (e *Executor) execute(ctx context.Context, log *slog.Logger, spec Spec, c command, d taskDirs, hooks Hooks, resumed *Checkpoint) error {
	if c.cgroup != nil {
		defer func() { _ = c.cgroup.fd.Close() }()
	}
	if err := lookCommand(c); err != nil {
		if c.cgroup != nil {
			killCgroup(log, c.cgroup.dir)
		}
		return err
	}
	logDir := filepath.Join(d.output, LogDir)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	if c.owned {
		if err := e.giveToTask(d.output, d.checkpoint, d.tmp); err != nil {
			return err
		}
	}
	stdout, err := os.OpenFile(filepath.Join(logDir, "stdout.log"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("task log: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(filepath.Join(logDir, "stderr.log"), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("task log: %w", err)
	}
	defer stderr.Close()
	exitPath := filepath.Join(d.root, exitFile)
	if err := os.Remove(exitPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("exit status file: %w", err)
	}

	cmd := exec.Command("/bin/sh", append([]string{"-c", wrapperScript, exitPath}, c.argv...)...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cgroup := ""
	if c.cgroup != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(c.cgroup.fd.Fd())
		cgroup = c.cgroup.dir
	}
	if err := cmd.Start(); err != nil {
		killCgroup(log, cgroup)
		return fmt.Errorf("start %q: %w", c.argv[0], err)
	}
	defer func() { _ = cmd.Process.Release() }() // reaped by supervise (wait4), or left running
	p := &taskProcess{pid: cmd.Process.Pid, child: true, cgroup: cgroup}
	log.Debug("task process started", "pid", p.pid)
	rec := runRecord{
		TaskID: spec.TaskID, JobID: spec.JobID, Index: spec.Index, Runtime: spec.Runtime, Image: spec.Image,
		Command: spec.Command, GPUs: spec.GPUs, PID: p.pid, Started: time.Now().UTC(), Resumed: resumed,
		ContainerRuntime: c.runtime, Container: c.container, CheckpointInterval: spec.CheckpointInterval,
		Cgroup: cgroup, MaxDiskBytes: spec.MaxDiskBytes,
	}
	if dl, ok := ctx.Deadline(); ok {
		rec.Deadline = dl.UTC()
	}
	if _, rec.StartTicks, err = procStat(p.pid); err != nil {
		log.Warn("process start time unknown: pid reuse is not guarded against", "pid", p.pid, "err", err)
	}
	if err := writeRunRecord(d.root, rec); err != nil {
		log.Warn("run record not written: the task will not survive a restart of the worker", "err", err)
	}
	return e.supervise(ctx, log, p, c.stop, d, hooks, resumed, spec.CheckpointInterval, spec.MaxDiskBytes)
}

// lookCommand fails early, as exec would, on a command that cannot be found: the
// wrapper would only report it as exit status 127.
func lookCommand(c command) error {
	name := c.argv[0]
	if c.look != "" {
		name = c.look
		if rel, err := filepath.Rel(ContainerInputDir, name); err == nil && filepath.IsLocal(rel) {
			name = filepath.Join(c.dir, rel) // the sandbox's working directory is c.dir
		}
	}
	var err error
	if !strings.Contains(name, "/") {
		_, err = exec.LookPath(name)
	} else {
		if !filepath.IsAbs(name) {
			name = filepath.Join(c.dir, name)
		}
		_, err = os.Stat(name)
	}
	if err != nil {
		return fmt.Errorf("start %q: %w", name, err)
	}
	return nil
}

// supervise waits for a task's process and watches the checkpoint directory. When ctx
// ends with ErrWorkerShutdown as its cause it returns at once, an error wrapping
// ErrDetached and ErrWorkerShutdown, and leaves the process group running with its run
// record in place. On any other end of ctx it calls stop, then sends SIGTERM to the
// group, then SIGKILL after KillGrace; so it does when the task's directories exceed
// maxDisk (watchDisk; 0: not watched). Whatever the command leaves running in its group
// when it exits is killed. The captured logs are then bounded to MaxLogBytes each
// (boundLog) and the run record removed. It returns nil on exit status 0, an *ExitError
// otherwise, or the cause (context.Cause) when the task was stopped: ctx's, or an error
// wrapping ErrDiskQuota.
func (e *Executor) supervise(ctx context.Context, log *slog.Logger, p *taskProcess, stop func(), d taskDirs, hooks Hooks, resumed *Checkpoint, interval time.Duration, maxDisk uint64) error {
	ctx, stopTask := context.WithCancelCause(ctx)
	defer stopTask(nil)
	watcher := newCheckpointWatcher(d.checkpoint, hooks.Checkpoint, log, resumed, interval)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watching sync.WaitGroup
	if hooks.Checkpoint != nil && interval > 0 {
		watching.Go(func() { watcher.poll(watchCtx, min(e.opts.CheckpointPoll, interval)) })
	}
	if maxDisk > 0 {
		watching.Go(func() { e.watchDisk(watchCtx, log, d, maxDisk, stopTask) })
	}
	if !p.await(ctx, 0) {
		if errors.Is(context.Cause(ctx), ErrWorkerShutdown) {
			stopWatch()
			watching.Wait()
			log.Info("worker shutting down: task process group left running", "pgid", p.pid)
			return fmt.Errorf("%w: process group %d: %w", ErrDetached, p.pid, ErrWorkerShutdown)
		}
		log.Info("stopping task process group", "pgid", p.pid, "cause", context.Cause(ctx))
		if stop != nil {
			stop()
		}
		e.kill(log, p)
	}
	signalGroup(log, p.pid, syscall.SIGKILL) // what the command left running
	killCgroup(log, p.cgroup)                // and whatever left its group
	stopWatch()
	watching.Wait()
	removeRunRecord(d.root)

	logDir := filepath.Join(d.output, LogDir)
	if _, err := boundLog(filepath.Join(logDir, "stdout.log"), e.opts.MaxLogBytes); err != nil {
		log.Warn("bound task log", "err", err)
	}
	stderrTail, err := boundLog(filepath.Join(logDir, "stderr.log"), e.opts.MaxLogBytes)
	if err != nil {
		log.Warn("bound task log", "err", err)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if hooks.Checkpoint != nil && interval > 0 {
		watcher.scan(ctx, true)
	}
	if maxDisk > 0 {
		// what it wrote since the last measure: a task over its disk fails however
		// its end fell between two measures
		if _, _, excess := diskExcess(log, d, maxDisk); excess != nil {
			return excess
		}
	}
	return p.status(filepath.Join(d.root, exitFile), stderrTail)
}

// boundLog keeps a finished task's log within limit bytes, its first and last halves
// with a line in between that says how much was left out (logCapture), and returns
// its last KiB (limit: MaxLogBytes). A task's logs are files it writes directly, so they are bounded once it
// ends, not while it runs: until then they take disk space like its outputs.
func boundLog(p string, limit int64) (string, error) {
	f, err := OpenTaskFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st.Size() <= limit {
		off := max(0, st.Size()-tailMax)
		buf := make([]byte, st.Size()-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return strings.TrimSpace(string(buf)), nil
	}
	tmp := p + ".bounded"
	lc, err := newLogCapture(tmp, limit)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(lc, f)
	lc.Close()
	if err == nil {
		err = lc.err
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return lc.Tail(), os.Rename(tmp, p)
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
// line in between that says how much was left out. Write never fails, so that a
// whole log is always read through.
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
	// p is in a directory the task could write: whatever it left there (a link to one of
	// the worker's files) is removed, never written through.
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("task log: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
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
	// interval: at most one report per interval (the final scan excepted); lastReport
	// is the time of the last one.
	interval   time.Duration
	lastReport time.Time
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func newCheckpointWatcher(dir string, hook func(Checkpoint), log *slog.Logger, resumed *Checkpoint, interval time.Duration) *checkpointWatcher {
	w := &checkpointWatcher{dir: dir, hook: hook, log: log, seen: map[string]fileStamp{}, reported: map[string]fileStamp{}, interval: interval}
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
		case now := <-t.C:
			if w.interval > 0 && !w.lastReport.IsZero() && now.Sub(w.lastReport) < w.interval {
				continue // the files stay unreported until the interval has passed
			}
			if w.scan(ctx, false) {
				w.lastReport = now
			}
		}
	}
}

func (w *checkpointWatcher) scan(ctx context.Context, final bool) bool {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		w.log.Warn("checkpoint scan", "err", err)
		return false
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
		return false
	}
	p := filepath.Join(w.dir, best)
	sha, err := hashTaskFile(ctx, p)
	if err != nil {
		w.log.Warn("checkpoint hash", "file", best, "err", err)
		return false
	}
	if sha == w.lastSHA {
		return false
	}
	w.lastSHA = sha
	w.log.Info("checkpoint", "file", best, "sha256", sha, "bytes", bestStamp.size)
	w.hook(Checkpoint{SHA256: sha, Path: p})
	return true
}

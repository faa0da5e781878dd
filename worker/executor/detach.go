package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Files of a PROCESS or CONTAINER run in the task's root directory, beside work/ and
// output/: prepare keeps them, Cleanup removes them.
const (
	// runFile is the run record (runRecord, JSON), written once the process started and
	// removed once the executor has seen it end. Its presence is what Detached reports.
	runFile = "run.json"
	// exitFile holds the command's exit status, written by the wrapper (wrapperScript).
	exitFile = "exit-status"
)

// exitPoll is how often a running task's process is checked for its exit: the latency
// a task's end adds, at the cost of one wait4 (or one /proc read) per poll.
const exitPoll = 50 * time.Millisecond

// runRecord is what a later start of the worker needs to adopt a running task: the
// process to wait for, guarded against pid reuse by its start time, and the spec
// essentials and deadline of the run.
type runRecord struct {
	TaskID  uint64              `json:"task_id"`
	JobID   uint64              `json:"job_id"`
	Index   uint32              `json:"index"`
	Runtime markettypes.Runtime `json:"runtime"`
	Image   string              `json:"image,omitempty"`
	Command []string            `json:"command,omitempty"`
	GPUs    []string            `json:"gpus,omitempty"`
	// CheckpointInterval is the job's checkpoint_interval (0: checkpoints not watched).
	CheckpointInterval time.Duration `json:"checkpoint_interval,omitempty"`
	// MaxDiskBytes is the run's Spec.MaxDiskBytes (0: no bound).
	MaxDiskBytes uint64 `json:"max_disk_bytes,omitempty"`
	// PID is the wrapper's pid, which is also the process group id of the task.
	PID int `json:"pid"`
	// StartTicks is field 22 of /proc/<pid>/stat: the process start time in clock ticks
	// since boot (0: unknown, the pid alone is trusted).
	StartTicks uint64    `json:"start_ticks"`
	Started    time.Time `json:"started"`
	// Deadline is the end of the run's max duration (zero: none).
	Deadline time.Time `json:"deadline,omitzero"`
	// Resumed is the checkpoint the run resumed from, not reported again.
	Resumed *Checkpoint `json:"resumed,omitempty"`
	// ContainerRuntime and Container name a CONTAINER task's runtime client and
	// container, removed when an adopted task is stopped.
	ContainerRuntime string `json:"container_runtime,omitempty"`
	// Cgroup is the task's own cgroup (Sandbox.Cgroup), killed when it ends.
	Cgroup    string `json:"cgroup,omitempty"`
	Container string `json:"container,omitempty"`
}

func writeRunRecord(root string, r runRecord) error {
	bz, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(root, runFile+".tmp")
	if err := os.WriteFile(tmp, bz, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(root, runFile))
}

func readRunRecord(root string) (runRecord, error) {
	var r runRecord
	bz, err := os.ReadFile(filepath.Join(root, runFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(bz, &r); err != nil {
		return r, fmt.Errorf("run record: %w", err)
	}
	if r.PID <= 1 {
		return r, fmt.Errorf("run record: pid %d", r.PID)
	}
	return r, nil
}

func removeRunRecord(root string) {
	_ = os.Remove(filepath.Join(root, runFile))
}

// Detached reports whether a task has a run record: a PROCESS or CONTAINER run that a
// previous start of the worker left running (or that ended while no worker watched it),
// to be adopted (Adopt) or abandoned (Abandon). The Spec holds what the record keeps:
// ids, runtime, image, command and GPUs.
func (e *Executor) Detached(taskID uint64) (Spec, bool) {
	r, err := readRunRecord(e.TaskDir(taskID))
	if err != nil {
		return Spec{}, false
	}
	return Spec{TaskID: r.TaskID, JobID: r.JobID, Index: r.Index, Runtime: r.Runtime, Image: r.Image, Command: r.Command, GPUs: r.GPUs, CheckpointInterval: r.CheckpointInterval}, true
}

// DetachedTasks lists the tasks with a run record, in no order.
func (e *Executor) DetachedTasks() []uint64 {
	var out []uint64
	for _, id := range e.TaskDirs() {
		if _, err := os.Stat(filepath.Join(e.TaskDir(id), runFile)); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// TaskDirs lists the tasks that have a directory here (TaskDir), in no given order.
func (e *Executor) TaskDirs() []uint64 {
	entries, err := os.ReadDir(filepath.Join(e.opts.WorkDir, "tasks"))
	if err != nil {
		return nil
	}
	var out []uint64
	for _, de := range entries {
		id, err := strconv.ParseUint(de.Name(), 10, 64)
		if err != nil || !de.IsDir() {
			continue
		}
		out = append(out, id)
	}
	return out
}

// Adopt waits for a task that a previous start of the worker left running (Detached),
// as Run would have: it watches the checkpoint directory again, kills the process group
// when the run's recorded deadline passes (ErrMaxDuration) or ctx is cancelled, detaches
// again on ErrWorkerShutdown, and once the process ends hashes the outputs and returns
// the same Result, or *ExitError, that Run returns. A task that ended while no worker
// watched is collected at once. A recorded process that is gone without an exit status
// (the machine rebooted, or its group was killed) fails with ErrTaskLost and its record
// is removed.
func (e *Executor) Adopt(ctx context.Context, taskID uint64, hooks Hooks) (Result, error) {
	d := e.dirs(taskID)
	rec, err := readRunRecord(d.root)
	if err != nil {
		return Result{}, fmt.Errorf("adopt task %d: %w", taskID, err)
	}
	log := e.log.With("task", taskID, "job", rec.JobID, "shard", rec.Index)
	if err := e.claim(taskID); err != nil {
		return Result{}, err
	}
	defer e.release(taskID)
	p := &taskProcess{pid: rec.PID, startTicks: rec.StartTicks, cgroup: rec.Cgroup}
	deadline := rec.Deadline
	if !processAlive(p.pid, p.startTicks) {
		st, err := os.Stat(filepath.Join(d.root, exitFile))
		var ctr containerState
		if err != nil && rec.Container != "" {
			ctr = containerRunning(ctx, rec.ContainerRuntime, rec.Container)
		}
		switch {
		case err == nil:
			if !deadline.IsZero() && !st.ModTime().After(deadline) {
				deadline = time.Time{} // it ended in time, while no worker watched
			}
		case ctr.running:
			// the runtime client is gone (killed with the worker's cgroup, say), its
			// container is not: wait for the container by its name instead
			if p, err = e.rewait(log, rec, ctr, d); err != nil {
				return Result{OutputDir: d.output}, err
			}
		default:
			killCgroup(log, rec.Cgroup)
			removeRunRecord(d.root)
			err := fmt.Errorf("task %d: process %d: %w", taskID, rec.PID, ErrTaskLost)
			if rec.Container != "" {
				// what the runtime says of the container, for whoever reads why the task was lost
				out, inspectErr := exec.CommandContext(ctx, rec.ContainerRuntime, "inspect", "--format",
					"{{.State.Status}} exit={{.State.ExitCode}} error={{.State.Error}}", rec.Container).CombinedOutput()
				log.Warn("container of a lost task", "container", rec.Container, "state", strings.TrimSpace(string(out)), "inspect_err", inspectErr)
			}
			log.Warn("task failed", "err", err)
			return Result{OutputDir: d.output}, err
		}
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline, fmt.Errorf("%w (deadline %s)", ErrMaxDuration, deadline.Format(time.RFC3339)))
		defer cancel()
	}
	log.Info("task adopted", "pid", rec.PID, "runtime", rec.Runtime.String(), "started", rec.Started)
	var stop func()
	if rec.Container != "" {
		stop = containerStop(ctx, log, rec.ContainerRuntime, rec.Container)
	}
	start := time.Now()
	runErr := e.supervise(ctx, log, p, stop, d, hooks, rec.Resumed, rec.CheckpointInterval, rec.MaxDiskBytes)
	res, err := e.collect(ctx, log, d, runErr)
	return e.outcome(ctx, log, taskID, start, res, err)
}

// noSuchContainer is podman's and docker's answer for a container that does not exist.
var noSuchContainer = regexp.MustCompile(`(?i)no such (container|object)`)

// containerState is what the runtime says of a task's container once its client is gone.
type containerState struct {
	running bool
	// conmon is the pid of podman's monitor of a container that runs while podman's
	// records do not say so (0: podman's records are right, or the runtime is not podman).
	conmon int
}

// containerRunning reports whether a container runs. podman records a container as
// running only once its client has seen it start: a client killed in between leaves it
// "initialized" (or "created") in podman's records while it runs under its conmon, so
// such a container whose conmon is alive counts as running, and its conmon is returned
// (podman wait answers at once for it, and its exit status reaches no record of
// podman's: rewait watches the conmon instead). An inspect that fails without an answer
// is asked again for up to 10 s before the container counts as gone: a container wrongly
// taken for gone is a task lost.
func containerRunning(ctx context.Context, runtime, name string) containerState {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		out, err := exec.CommandContext(ctx, runtime, "inspect", "--format", "{{.State.Status}} {{.State.ConmonPid}}", name).Output()
		if err == nil {
			status, conmonField, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
			switch status {
			case "running":
				return containerState{running: true}
			case "initialized", "created":
				// docker has no conmon: its field does not parse, and a docker
				// container that is "created" has not started
				pid, err := strconv.Atoi(conmonField)
				if err != nil || pid <= 1 || !processAlive(pid, 0) {
					return containerState{}
				}
				return containerState{running: true, conmon: pid}
			default:
				return containerState{}
			}
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && noSuchContainer.Match(exitErr.Stderr) {
			return containerState{}
		}
		if try == 20 || ctx.Err() != nil {
			return containerState{}
		}
		select {
		case <-ctx.Done():
			return containerState{}
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// rewaitScript waits for a container by its name ("$@" is "<runtime> wait <name>", which
// prints the container's exit status) and writes that status to the file named by $0,
// as wrapperScript does for the runtime client. A wait that fails writes nothing: the
// task is then lost (ErrTaskLost), not given a made-up status.
const rewaitScript = `if code=$("$@") && [ -n "$code" ]; then echo "$code" > "$0"; fi`

// conmonWaitScript waits for a podman container that runs while podman's records say
// it does not (containerState.conmon): it waits while the conmon $1 runs (its /proc stat
// names a conmon that is not a zombie: a reused pid is not waited for), reading the container's exit status from the file the
// conmon writes ($2, in podman's exit directory) in the short time before podman's
// cleanup, which the conmon runs and waits for, removes it; failing that, podman's
// record once it says the container exited ($3 inspect $4). It writes the status to the
// file named by $0, or nothing (the task is lost) when neither says it.
const conmonWaitScript = `code=
while { read -r stat < "/proc/$1/stat"; } 2>/dev/null; do
	case "$stat" in *" (conmon) Z "* | *" (conmon) X "*) break ;; *" (conmon) "*) ;; *) break ;; esac
	if [ -z "$code" ] && [ -n "$2" ] && [ -s "$2" ]; then read -r code < "$2"; fi
	sleep 0.01
done
if [ -z "$code" ] && [ -n "$2" ] && [ -s "$2" ]; then read -r code < "$2"; fi
if [ -z "$code" ]; then
	st=$("$3" inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$4" 2>/dev/null)
	case "$st" in "exited "*|"stopped "*) code=${st#* } ;; esac
fi
if [ -n "$code" ]; then echo "$code" > "$0"; fi`

// conmonExitFile is the file in which a podman conmon writes its container's exit
// status: <exit dir>/<container id>, both read from the conmon's command line ("" when
// it cannot be read).
func conmonExitFile(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	var dir, id string
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--exit-dir":
			dir = args[i+1]
		case "-c", "--cid":
			id = args[i+1]
		}
	}
	if dir == "" || id == "" || strings.ContainsAny(id, "/.") {
		return ""
	}
	return filepath.Join(dir, id)
}

// rewait re-attaches to a CONTAINER task whose runtime client is gone but whose container
// runs: a new wrapper waits for the container by its name (or, for a podman container
// whose start podman never recorded, watches its conmon); its run record now names that
// wrapper. What the container prints from now on is not captured (the client that carried
// it is gone); a line in its stderr log says so. Its outputs are unaffected.
func (e *Executor) rewait(log *slog.Logger, rec runRecord, st containerState, d taskDirs) (*taskProcess, error) {
	exitPath := filepath.Join(d.root, exitFile)
	if f, err := os.OpenFile(filepath.Join(d.output, LogDir, "stderr.log"), os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0); err == nil {
		_, _ = fmt.Fprintf(f, "\n[flops: the container runtime's client was gone when the worker restarted; output after this is not captured]\n")
		_ = f.Close()
	}
	var cmd *exec.Cmd
	if st.conmon > 0 {
		exitStatus := conmonExitFile(st.conmon)
		log.Info("podman never recorded the container's start: its conmon is watched", "container", rec.Container, "conmon", st.conmon, "exit_file", exitStatus)
		cmd = exec.Command("/bin/sh", "-c", conmonWaitScript, exitPath, strconv.Itoa(st.conmon), exitStatus, rec.ContainerRuntime, rec.Container)
	} else {
		cmd = exec.Command("/bin/sh", "-c", rewaitScript, exitPath, rec.ContainerRuntime, "wait", rec.Container)
	}
	cmd.Dir = d.tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("re-attach to container %s: %w", rec.Container, err)
	}
	p := &taskProcess{pid: cmd.Process.Pid, child: true, cgroup: rec.Cgroup}
	_ = cmd.Process.Release() // reaped by supervise
	rec.PID = p.pid
	if _, ticks, err := procStat(p.pid); err == nil {
		rec.StartTicks = ticks
	}
	if err := writeRunRecord(d.root, rec); err != nil {
		log.Warn("run record not rewritten", "err", err)
	}
	log.Info("re-attached to the container by its name: its runtime client was gone", "container", rec.Container, "pid", p.pid)
	return p, nil
}

// Abandon stops a detached task that is no longer this machine's (it was reassigned or
// its job ended while the worker was down): its process group is killed as a cancelled
// task's is, and its record removed. A task without a record is left alone.
func (e *Executor) Abandon(ctx context.Context, taskID uint64) {
	d := e.dirs(taskID)
	rec, err := readRunRecord(d.root)
	if err != nil {
		return
	}
	if e.claim(taskID) != nil {
		return // running here: its run stops it
	}
	defer e.release(taskID)
	log := e.log.With("task", taskID, "job", rec.JobID)
	p := &taskProcess{pid: rec.PID, startTicks: rec.StartTicks}
	if processAlive(p.pid, p.startTicks) {
		log.Info("stopping a detached task that is no longer ours", "pgid", p.pid)
		if rec.Container != "" {
			containerStop(ctx, log, rec.ContainerRuntime, rec.Container)()
		}
		e.kill(log, p)
	}
	killCgroup(log, rec.Cgroup)
	removeRunRecord(d.root)
}

// taskProcess is a task's wrapper process: the worker's child (reaped with wait4) or
// one a previous start of the worker left (watched through /proc).
type taskProcess struct {
	pid        int // and pgid
	startTicks uint64
	cgroup     string // the task's own cgroup, "" if none
	child      bool
	gone       bool
	reaped     bool
	ws         syscall.WaitStatus
}

// exited reports whether the process has ended (a zombie counts).
func (p *taskProcess) exited() bool {
	if p.gone {
		return true
	}
	if p.child {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		switch {
		case pid == p.pid:
			p.gone, p.reaped, p.ws = true, true, ws
		case errors.Is(err, syscall.ECHILD):
			p.gone = true
		}
		return p.gone
	}
	p.gone = !processAlive(p.pid, p.startTicks)
	return p.gone
}

// await polls for the process's end until ctx ends or limit (0: none) passes, and
// reports whether it ended.
func (p *taskProcess) await(ctx context.Context, limit time.Duration) bool {
	tick := time.NewTicker(exitPoll)
	defer tick.Stop()
	var expired <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		expired = t.C
	}
	for {
		if p.exited() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-expired:
			return false
		case <-tick.C:
		}
	}
}

// kill stops a process group: SIGTERM, then SIGKILL after KillGrace, and waits for the
// group's leader.
func (e *Executor) kill(log *slog.Logger, p *taskProcess) {
	signalGroup(log, p.pid, syscall.SIGTERM)
	if !p.await(context.Background(), e.opts.KillGrace) {
		log.Warn("task process group outlived SIGTERM; killing it", "pgid", p.pid, "grace", e.opts.KillGrace)
		signalGroup(log, p.pid, syscall.SIGKILL)
		p.await(context.Background(), 0)
	}
	signalGroup(log, p.pid, syscall.SIGKILL) // what the command left running
}

// status is the command's outcome: the exit status the wrapper wrote, or the wrapper's
// own wait status when it was killed before writing one. Following POSIX shells, a
// status of 128+n (n a signal number, 1 to 64) is a command ended by signal n.
func (p *taskProcess) status(exitPath, stderrTail string) error {
	if b, err := os.ReadFile(exitPath); err == nil {
		if code, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			switch {
			case code == 0:
				return nil
			case code > 128 && code <= 128+64:
				return &ExitError{Code: -1, Signal: syscall.Signal(code - 128).String(), Stderr: stderrTail}
			default:
				return &ExitError{Code: code, Stderr: stderrTail}
			}
		}
	}
	if p.reaped {
		switch {
		case p.ws.Signaled():
			return &ExitError{Code: -1, Signal: p.ws.Signal().String(), Stderr: stderrTail}
		case p.ws.ExitStatus() != 0:
			return &ExitError{Code: p.ws.ExitStatus(), Stderr: stderrTail}
		}
	}
	return fmt.Errorf("process %d: %w", p.pid, ErrTaskLost)
}

// processAlive reports whether pid runs, is not a zombie and, when startTicks is not 0,
// started at startTicks (so is not a later process that reused the pid).
func processAlive(pid int, startTicks uint64) bool {
	state, ticks, err := procStat(pid)
	if err != nil || state == 'Z' || state == 'X' {
		return false
	}
	return startTicks == 0 || ticks == startTicks
}

// procStat reads a process's state (field 3) and start time (field 22, clock ticks
// since boot) from /proc/<pid>/stat.
func procStat(pid int) (state byte, startTicks uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	x := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if x < 0 || x+2 >= len(s) {
		return 0, 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	fields := strings.Fields(s[x+2:]) // fields[0] is field 3
	if len(fields) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	startTicks, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return fields[0][0], startTicks, nil
}

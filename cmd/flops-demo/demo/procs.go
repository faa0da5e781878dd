//go:build unix

package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// proc is a child process in its own process group, its output in a log file.
type proc struct {
	name string
	log  string
	bin  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start runs bin with args, stdout and stderr appended to logPath.
func (d *Demo) start(name, logPath, bin string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...) //nolint:gosec // our own binaries, our own arguments
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, bin: bin, args: args, cmd: cmd, done: make(chan struct{})}
	d.waits.Go(func() error {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
		return nil
	})
	d.procs = append(d.procs, p)
	return p, nil
}

// running says whether the process is still alive.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail is the last n lines of a log file (for error messages).
func tail(path string, n int) string {
	bz, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(bz), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// localnet runs scripts/localnet.sh with args (it returns once the chain makes blocks).
func (d *Demo) localnet(ctx context.Context, args ...string) error {
	all := append([]string{"--home", d.chainHome(), "--binary", d.bin("flopsd")}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(d.o.Root, "scripts", "localnet.sh"), all...) //nolint:gosec // our script
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("localnet.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// stopChain stops the localnet's nodes.
func (d *Demo) stopChain() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = d.localnet(ctx, "stop")
}

// crash kills p's process group (SIGKILL) and waits until it is gone.
func (d *Demo) crash(p *proc) error {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: still running 30 s after SIGKILL", p.name)
	}
}

// crashWorker waits for a task in flight (assigned or running) on provider i's node,
// then crashes its worker and starts it again on its home.
func (d *Demo) crashWorker(ctx context.Context, i int) error {
	if i < 0 || i >= len(d.workers) || i >= len(d.sum.Nodes) {
		return fmt.Errorf("no provider %d (the demo has %d)", i+1, len(d.workers))
	}
	node := d.sum.Nodes[i].ID
	var task uint64
	err := d.waitFor(ctx, 2*time.Minute, fmt.Sprintf("a task in flight on node %d", node), func(ctx context.Context) (bool, error) {
		for _, j := range d.sum.Jobs {
			tasks, err := d.c.Market.TasksByJob(ctx, &markettypes.QueryTasksByJobRequest{JobId: j.ID})
			if err != nil {
				return false, err
			}
			for _, t := range tasks.Tasks {
				if t.NodeId == node && (t.Status == markettypes.TASK_STATUS_ASSIGNED || t.Status == markettypes.TASK_STATUS_RUNNING) {
					task = t.Id
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	old := d.workers[i]
	if err := d.crash(old); err != nil {
		return err
	}
	d.say(d.name(i), "flops-worker killed (SIGKILL to its process group) with task %d in flight on node %d", task, node)
	p, err := d.start(old.name, old.log, old.bin, old.args...)
	if err != nil {
		return err
	}
	d.workers[i] = p
	d.sum.WorkerCrashed = d.name(i)
	d.say(d.name(i), "flops-worker started again on its home (log %s)", old.log)
	return nil
}

// crashChain kills every validator (SIGKILL), starts them again on their homes with the
// localnet's flags, and waits for new blocks.
func (d *Demo) crashChain(ctx context.Context) error {
	pidsFile := filepath.Join(d.chainHome(), "pids")
	bz, err := os.ReadFile(pidsFile)
	if err != nil {
		return err
	}
	before, _, err := d.c.Height(ctx)
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(string(bz)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return err
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		for syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	d.say("chain", "killed all %d validator(s) (SIGKILL) at height %d: no blocks, no gRPC for the workers and the client", d.o.Validators, before)
	time.Sleep(3 * time.Second)
	var pids []string
	for i := range d.o.Validators {
		home := filepath.Join(d.chainHome(), fmt.Sprintf("node%d", i))
		p, err := d.start(fmt.Sprintf("node%d", i), home+".log", d.bin("flopsd"), "start", "--home", home, "--inv-check-period", "1")
		if err != nil {
			return err
		}
		pids = append(pids, strconv.Itoa(p.cmd.Process.Pid))
	}
	if err := os.WriteFile(pidsFile, []byte(strings.Join(pids, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	err = d.waitFor(ctx, 2*time.Minute, "blocks after the restart", func(ctx context.Context) (bool, error) {
		h, _, err := d.c.Height(ctx)
		return err == nil && h > before+1, err
	})
	if err != nil {
		return err
	}
	d.sum.ChainCrashed = true
	d.say("chain", "validators started again on their homes: blocks again")
	return nil
}

// killValidator kills validator i (SIGKILL: a crash, not a shutdown).
func (d *Demo) killValidator(i int) error {
	bz, err := os.ReadFile(filepath.Join(d.chainHome(), "pids"))
	if err != nil {
		return err
	}
	pids := strings.Fields(string(bz))
	if i < 0 || i >= len(pids) {
		return fmt.Errorf("no validator %d (the localnet has %d)", i, len(pids))
	}
	pid, err := strconv.Atoi(pids[i])
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// command runs a short command and returns its combined output.
func command(ctx context.Context, bin string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput() //nolint:gosec // our binaries
	return string(out), err
}

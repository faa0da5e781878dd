package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// pinnedImage is an image reference pinned by digest, as x/market accepts it.
var pinnedImage = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$`)

// containerStopTimeout bounds the "rm -f" of a cancelled task's container.
const containerStopTimeout = 30 * time.Second

// containerRuntime finds the runtime binary: Options.ContainerRuntime, or the first of
// docker and podman in PATH that answers "info" (a docker client without its daemon does
// not), else the first in PATH. The choice is made once.
func (e *Executor) containerRuntime() (bin, flavor string, err error) {
	if e.opts.ContainerRuntime != "" {
		p, err := exec.LookPath(e.opts.ContainerRuntime)
		if err != nil {
			return "", "", fmt.Errorf("a CONTAINER task needs %s in PATH: %w", e.opts.ContainerRuntime, ErrNoContainerRuntime)
		}
		return p, e.opts.ContainerRuntime, nil
	}
	e.rtOnce.Do(func() {
		for _, n := range []string{"docker", "podman"} {
			p, err := exec.LookPath(n)
			if err != nil {
				continue
			}
			if e.rtBin == "" {
				e.rtBin, e.rtFlavor = p, n
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err = exec.CommandContext(ctx, p, "info").Run()
			cancel()
			if err == nil {
				e.rtBin, e.rtFlavor = p, n
				return
			}
			e.log.Warn("container runtime does not answer", "runtime", p, "err", err)
		}
	})
	if e.rtBin == "" {
		return "", "", fmt.Errorf("a CONTAINER task needs docker or podman in PATH: %w", ErrNoContainerRuntime)
	}
	return e.rtBin, e.rtFlavor, nil
}

// ContainerRuntime is the runtime client CONTAINER tasks would run with, or why there is
// none (ErrNoContainerRuntime): a node should not accept CONTAINER jobs without one.
func (e *Executor) ContainerRuntime() (string, error) {
	bin, _, err := e.containerRuntime()
	return bin, err
}

// containerParams are the parts of a container command line.
type containerParams struct {
	flavor     string // "docker" or "podman"
	name       string
	taskID     uint64
	jobID      uint64
	uid, gid   int
	rootless   bool   // the worker is not root: its runtime is rootless
	input      string // host directories
	output     string
	checkpoint string
	env        []string // NAME=VALUE
	gpus       []string
	image      string
	// pull: the runtime must take the image from its registry (--pull=always), even if it
	// holds an image of that digest under another name (imageLocal)
	pull    bool
	command []string
	// limits (0: none) and the network
	memory    uint64 // bytes
	processes uint64
	cpus      uint64
	network   bool
}

// containerArgs is the argument list of "docker run" or "podman run" for a task
// (docs/workloads.md section 6): removed on exit, no network (unless the provider allows
// it), no added privileges, a read-only root filesystem with a writable /tmp, memory,
// process and CPU limits, the inputs read-only, outputs and checkpoints writable, run as
// the worker's user (as the sandbox's user when the worker is root), the pinned GPUs only.
func containerArgs(p containerParams) []string {
	args := []string{
		"run", "--rm",
		"--name", p.name,
		"--hostname", TaskHostname,
		"--label", "flops.task=" + strconv.FormatUint(p.taskID, 10),
		"--label", "flops.job=" + strconv.FormatUint(p.jobID, 10),
	}
	if p.pull {
		args = append(args, "--pull=always")
	}
	if !p.network {
		args = append(args, "--network", "none")
	}
	args = append(args,
		"--init",
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"--read-only",
		"--tmpfs", "/tmp:rw,nosuid,nodev,mode=1777",
	)
	if p.memory > 0 {
		m := strconv.FormatUint(p.memory, 10)
		args = append(args, "--memory", m, "--memory-swap", m) // no swap beyond the memory
	}
	if p.processes > 0 {
		args = append(args, "--pids-limit", strconv.FormatUint(p.processes, 10))
	}
	if p.cpus > 0 {
		args = append(args, "--cpus", strconv.FormatUint(p.cpus, 10))
	}
	if p.flavor == "podman" && p.rootless {
		// Rootless podman: the worker's user is root's mapping; keep-id runs the task
		// as the worker's own uid, so the host sees its files as the worker's.
		args = append(args, "--userns", "keep-id")
	} else {
		args = append(args, "--user", strconv.Itoa(p.uid)+":"+strconv.Itoa(p.gid))
	}
	args = append(args,
		"--mount", "type=bind,source="+p.input+",target="+ContainerInputDir+",readonly",
		"--mount", "type=bind,source="+p.output+",target="+ContainerOutputDir,
		"--mount", "type=bind,source="+p.checkpoint+",target="+ContainerCheckpointDir,
	)
	for _, kv := range p.env {
		args = append(args, "--env", kv)
	}
	if len(p.gpus) > 0 {
		if p.flavor == "podman" {
			for _, g := range p.gpus {
				args = append(args, "--device", "nvidia.com/gpu="+g) // CDI device by UUID
			}
		} else {
			// The quotes are part of the value: docker reads --gpus as CSV, and a
			// device list holds commas.
			args = append(args, "--gpus", `"device=`+strings.Join(p.gpus, ",")+`"`)
		}
	}
	args = append(args, p.image)
	return append(args, p.command...)
}

// containerCommand is a CONTAINER task: the runtime client, run with the worker's own
// environment (the client needs DOCKER_HOST, XDG_RUNTIME_DIR and the like), and a stop
// that removes the container, since killing the client does not stop it.
func (e *Executor) containerCommand(ctx context.Context, log *slog.Logger, spec Spec, d taskDirs) (command, error) {
	bin, flavor, err := e.containerRuntime()
	if err != nil {
		return command{}, err
	}
	for _, dir := range []string{d.work, d.output, d.checkpoint} {
		if strings.ContainsAny(dir, ",=\"\n") {
			return command{}, fmt.Errorf("work directory %q: a path with ',', '=', '\"' or a newline cannot be bind-mounted", dir)
		}
	}
	pull, fresh, err := e.checkImage(ctx, log, bin, spec)
	if err != nil {
		return command{}, err
	}
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	name := fmt.Sprintf("flops-task-%d-%s", spec.TaskID, hex.EncodeToString(nonce[:]))
	base := &envList{}
	base.set("HOME", "/tmp")
	env := taskEnv(log, spec, base, ContainerInputDir, ContainerOutputDir, ContainerCheckpointDir)
	sb := e.opts.Sandbox
	gpus := uint64(max(len(spec.GPUs), 1))
	devices := spec.GPUs
	if len(devices) > 0 && sb.Devices != nil {
		// GPUs with no device node on this machine (mock GPUs of a demo) have nothing
		// for the runtime to pass through; the task still gets their ids.
		if nodes, err := sb.Devices(spec.GPUs); err != nil {
			return command{}, fmt.Errorf("%w: device nodes of the task's GPUs: %w", ErrNoSandbox, err)
		} else if len(nodes) == 0 {
			log.Info("the task's GPUs have no device nodes here: none passed to the container", "gpus", spec.GPUs)
			devices = nil
		}
	}
	uid, gid, owned := os.Getuid(), os.Getgid(), false
	if uid == 0 {
		uid, gid, owned = sb.UID, sb.GID, true // never root in the container
	}
	args := containerArgs(containerParams{
		flavor: flavor, name: name, taskID: spec.TaskID, jobID: spec.JobID,
		uid: uid, gid: gid, rootless: os.Getuid() != 0,
		input: d.work, output: d.output, checkpoint: d.checkpoint,
		env: env.list(), gpus: devices, image: spec.Image, command: spec.Command,
		memory: sb.MemoryPerGPU * gpus, processes: sb.Processes, cpus: sb.CPUsPerGPU * gpus, network: sb.Network,
		pull: pull,
	})
	log.Info("container task", "runtime", bin, "container", name)
	return command{argv: append([]string{bin}, args...), dir: d.tmp, env: os.Environ(), stop: containerStop(ctx, log, bin, name),
		container: name, runtime: bin, owned: owned, image: spec.Image, fresh: fresh}, nil
}

// containerStop removes a task's container, since killing the runtime client does not
// stop it.
func containerStop(ctx context.Context, log *slog.Logger, bin, name string) func() {
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerStopTimeout)
		defer cancel()
		out, err := exec.CommandContext(sctx, bin, "rm", "-f", name).CombinedOutput()
		if err != nil {
			log.Warn("remove task container", "container", name, "err", err, "output", strings.TrimSpace(string(out)))
		}
	}
}

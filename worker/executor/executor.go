package executor

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	wpocp "github.com/flopsnet/flops/worker/pocp"
	"github.com/flopsnet/flops/x/gfl/pocp"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Defaults of the optional Options fields.
const (
	DefaultCheckpointPoll = 5 * time.Second
	DefaultKillGrace      = 10 * time.Second
	DefaultMaxInputBytes  = int64(1) << 40 // 1 TiB per input
	DefaultMaxLogBytes    = int64(8) << 20 // 8 MiB per captured stream
)

// TaskHostname is the hostname every sandboxed or container task sees, whatever the
// machine: nothing in a task's environment tells one run of a shard from another.
const TaskHostname = "flops-task"

// Container paths of the task directories (docs/workloads.md section 6).
const (
	ContainerInputDir      = "/flops/input"
	ContainerOutputDir     = "/flops/output"
	ContainerCheckpointDir = "/flops/checkpoint"
)

// LogDir is the directory of the output dir that holds the captured stdout.log and
// stderr.log. Files under it are served to the owner but are not part of the result root.
const LogDir = ".flops"

// Options configures an Executor. Only WorkDir is required.
type Options struct {
	// WorkDir holds the task directories (tasks/<task id>/...) and the input cache
	// (cache/sha256/<digest>). It is created if missing.
	WorkDir string
	// Log is the logger (nil: discard).
	Log *slog.Logger
	// HTTPClient fetches inputs and checkpoints (nil: a client without a timeout; the
	// task's context bounds every request).
	HTTPClient *http.Client
	// SignCheckpointFetch, if set, signs each request for a checkpoint to resume from (not
	// for inputs): another provider's output server serves a task's checkpoint only to its
	// owner and to the provider the chain has the task with now (outputs.WithCheckpoints),
	// which the daemon signs as, with its operator key (outputs.SignRequest).
	SignCheckpointFetch func(*http.Request) error
	// RegistryTransport reads CONTAINER images' manifests from their registries before
	// the runtime pulls them (checkImage); nil: http.DefaultTransport. The daemon gives it
	// the inputs' transport, so that a job's image is read from the provider's own
	// network only where its inputs may be.
	RegistryTransport http.RoundTripper
	// RegistryLogins are the registries (host or host:port; "docker.io" for Docker Hub)
	// whose logins in the docker and podman login files the image check may use to read a
	// job's image (their rate limits), once the registry has shown it serves the image
	// without a login. Elsewhere it reads anonymously: a job naming by digest a private
	// image the provider's logins reach (its own registry's, a digest seen on chain) is
	// refused as its registry's refusal, where the provider's login had passed it to the
	// runtime.
	RegistryLogins []string
	// LocalImages lets a task run any image the runtime holds under the name the job
	// gives, as the worker did before: the operator's own builds (localhost/) and pulls
	// included. Without it such an image runs only if the worker pulled it for a task
	// (its check read it from its registry then), or if its registry serves it without a
	// login (asked afresh, imagePublic): a job naming an image the operator built or
	// pulled privately, by a digest seen on chain, ran it and could copy it out. For a
	// local chain (the demo, examples/container-job.yaml) or a machine whose images are
	// all public.
	LocalImages bool
	// InputCacheBytes bounds the inputs and checkpoints kept in the cache for later tasks:
	// once a task ends, the least recently used are removed until the rest fit, sparing
	// any used within the last hour (inputcache.go). 0: no bound.
	InputCacheBytes uint64
	// ImageCacheBytes bounds the images the worker pulled for CONTAINER tasks that it
	// keeps for later tasks, by their size in the runtime's storage: once a task ends, the
	// least recently used are removed until the rest fit (imagecache.go). 0: each is
	// removed after its task. Images the worker did not pull are never removed.
	ImageCacheBytes uint64
	// IPFSGateway is the base URL through which ipfs:// inputs are fetched:
	// ipfs://CID/p is read from IPFSGateway + "/ipfs/CID/p". Empty: ipfs inputs fail.
	IPFSGateway string
	// ContainerRuntime is "docker", "podman", or "" to use whichever of the two is found
	// first in PATH (docker first) when a CONTAINER task runs.
	ContainerRuntime string
	// Workers is the number of goroutines of the BUILTIN workloads (< 1: GOMAXPROCS).
	Workers int
	// GemmSolver computes a BUILTIN gemm task's product: the worker's PoCP solver (the GPU
	// solver, falling back to the CPU one, where the worker has one), run on the task's
	// GPUs (worker/pocp.OnDevices). Its answers are spot-checked like a challenge's. nil:
	// x/gfl/pocp's CPU solver on Workers goroutines.
	GemmSolver wpocp.Solver
	// CheckpointPoll is how often the checkpoint directory of a running PROCESS or
	// CONTAINER task is scanned (0: DefaultCheckpointPoll).
	CheckpointPoll time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL to a cancelled task's process
	// group (0: DefaultKillGrace).
	KillGrace time.Duration
	// MaxInputBytes bounds the size of one input or checkpoint download (0:
	// DefaultMaxInputBytes).
	MaxInputBytes int64
	// Sandbox confines PROCESS tasks and limits CONTAINER ones (sandbox.go). Its zero
	// value is the default sandbox; New fails when it cannot be set up.
	Sandbox Sandbox
	// MaxLogBytes bounds each captured log, stdout and stderr, once the task ends: its
	// first and last halves are kept (0: DefaultMaxLogBytes). A running task writes its
	// logs straight to files, bounded until then by its disk (Spec.MaxDiskBytes).
	MaxLogBytes int64
	// DiskPoll is how often the disk a running PROCESS or CONTAINER task fills is
	// measured against its Spec.MaxDiskBytes (0: DefaultDiskPoll).
	DiskPoll time.Duration
}

// Spec is one task to run, as the agent assembles it from the chain's job and task.
type Spec struct {
	TaskID uint64
	JobID  uint64
	// Owner is the job's (or the pool's) owner: its tasks share their inputs and
	// checkpoints in the cache, which no other owner's task is given (cachePath).
	Owner   string
	Index   uint32 // shard index of the task within its job
	Runtime markettypes.Runtime
	// Image is the BUILTIN workload name ("gemm", "checksum") or the CONTAINER image,
	// pinned by digest (repo@sha256:<64 hex>).
	Image   string
	Command []string
	Env     []markettypes.EnvVar
	Inputs  []markettypes.Input
	Builtin markettypes.BuiltinArgs
	// Gemm is the challenge of a BUILTIN gemm task: job.GemmChallenge(index) for
	// a job's shard, or pool.UnitGemm(unit) for a pool unit.
	Gemm *pocp.Challenge
	// MaxDuration bounds the run, input fetching included (0: no bound).
	MaxDuration time.Duration
	// GPUs are the UUIDs (GPU-... or MIG-...) the task is pinned to; empty: none.
	GPUs []string
	// Resume is the checkpoint to resume from, placed in the checkpoint directory before
	// the command starts; nil: a fresh start.
	Resume *Checkpoint
	// CheckpointInterval is the job's checkpoint_interval: the task gets it as
	// FLOPS_CHECKPOINT_INTERVAL (seconds) and its checkpoints are reported at most once
	// per interval (the newest one); 0: checkpoints are not watched.
	CheckpointInterval time.Duration
	// MaxDiskBytes bounds the disk a PROCESS or CONTAINER task fills (its outputs, logs,
	// checkpoints and scratch files): past it, or past MaxOutputFiles files, the task is
	// killed and Run returns an error wrapping ErrDiskQuota (disk.go). The agent sets the
	// chain's task_disk_mib_per_gpu for each GPU the job asks for. 0: no bound.
	MaxDiskBytes uint64
}

// Checkpoint is a file a task saved in its checkpoint directory.
type Checkpoint struct {
	// SHA256 is the file's digest, 64 lowercase hex characters.
	SHA256 string
	// URI is where the file can be fetched (https, http or ipfs); set by whoever
	// publishes it. The executor reports checkpoints with an empty URI.
	URI string
	// Path is the file on this machine. A reported checkpoint's Path lies in the task's
	// checkpoint directory, which the task may overwrite: copy it before publishing.
	Path string
}

// Hooks are the agent's callbacks during a run.
type Hooks struct {
	// Checkpoint is called, from one goroutine at a time, for each new checkpoint of a
	// PROCESS or CONTAINER task (docs/workloads.md section 7). It must not block long:
	// it delays the next scan, not the task. nil: checkpoints are not watched.
	Checkpoint func(Checkpoint)
}

// OutputFile is one file of a task's output directory.
type OutputFile struct {
	// Path is relative to the output directory, with "/" separators.
	Path string `json:"path"`
	// Size is in bytes.
	Size int64 `json:"size"`
	// SHA256 is the content digest, 64 lowercase hex characters.
	SHA256 string `json:"sha256"`
}

// Result is a finished task.
type Result struct {
	// Root is the result root the provider commits: the pocp Merkle root of the product
	// for gemm, the manifest root of Files for every other workload.
	Root [32]byte
	// OutputDir is the task's output directory.
	OutputDir string
	// Files are the output files the root covers, sorted by path.
	Files []OutputFile
	// Logs are the captured logs (LogDir/stdout.log, LogDir/stderr.log), not in the
	// root.
	Logs []OutputFile
	// Gemm is the product of a gemm task and its tree, to open sampled chunks.
	Gemm *GemmResult
}

// Executor runs tasks. It is safe for concurrent use by tasks with distinct ids.
type Executor struct {
	opts    Options
	log     *slog.Logger
	client  *http.Client
	sandbox sandboxTools

	rtOnce          sync.Once // the container runtime, auto-detected once
	rtBin, rtFlavor string

	images *imageCache
	sizes  *imageSizes

	mu      sync.Mutex
	running map[uint64]struct{}
}

var gpuID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`)

// New checks the options and creates the work directory.
func New(o Options) (*Executor, error) {
	if o.WorkDir == "" {
		return nil, errors.New("executor: no work directory")
	}
	abs, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("executor: work directory %q: %w", o.WorkDir, err)
	}
	o.WorkDir = abs
	switch o.ContainerRuntime {
	case "", "docker", "podman":
	default:
		return nil, fmt.Errorf("executor: container runtime %q: must be docker, podman or empty (auto-detect)", o.ContainerRuntime)
	}
	if o.IPFSGateway != "" {
		u, err := url.Parse(o.IPFSGateway)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("executor: IPFS gateway %q: must be an http(s) URL", o.IPFSGateway)
		}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Workers < 1 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.CheckpointPoll <= 0 {
		o.CheckpointPoll = DefaultCheckpointPoll
	}
	if o.DiskPoll <= 0 {
		o.DiskPoll = DefaultDiskPoll
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.MaxInputBytes <= 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = DefaultMaxLogBytes
	}
	for _, d := range []string{filepath.Join(abs, "tasks"), filepath.Join(abs, "cache", "sha256"), filepath.Join(abs, "cache", "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("executor: %w", err)
		}
	}
	tools, err := setupSandbox(&o.Sandbox, abs)
	if err != nil && o.Sandbox.Required {
		return nil, fmt.Errorf("executor: %w", err)
	}
	tools.err = err
	return &Executor{
		opts:    o,
		log:     o.Log.With("component", "executor"),
		client:  o.HTTPClient,
		sandbox: tools,
		images:  newImageCache(abs, o.ImageCacheBytes),
		sizes:   newImageSizes(abs),
		running: map[uint64]struct{}{},
	}, nil
}

// taskDirs are the directories of one task under WorkDir/tasks/<id>.
type taskDirs struct {
	root       string
	work       string // the working directory: the inputs (FLOPS_INPUT_DIR)
	output     string // FLOPS_OUTPUT_DIR
	checkpoint string // FLOPS_CHECKPOINT_DIR
	tmp        string // HOME and TMPDIR of a PROCESS task
}

// TaskDir is the directory of a task's files under the work directory.
func (e *Executor) TaskDir(taskID uint64) string {
	return filepath.Join(e.opts.WorkDir, "tasks", strconv.FormatUint(taskID, 10))
}

func (e *Executor) dirs(taskID uint64) taskDirs {
	root := e.TaskDir(taskID)
	return taskDirs{
		root:       root,
		work:       filepath.Join(root, "work"),
		output:     filepath.Join(root, "output"),
		checkpoint: filepath.Join(root, "checkpoint"),
		tmp:        filepath.Join(root, "tmp"),
	}
}

// TaskLogs is the directory of a task's captured logs (stdout.log, stderr.log) on this
// machine: running says this executor runs the task now (more may come); ok is false when
// no run of the task left a directory here (or it was cleaned up).
func (e *Executor) TaskLogs(taskID uint64) (dir string, running, ok bool) {
	e.mu.Lock()
	_, running = e.running[taskID]
	e.mu.Unlock()
	dir = filepath.Join(e.dirs(taskID).output, LogDir)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", running, running
	}
	return dir, running, true
}

// Cleanup removes a task's directory (its inputs, outputs and checkpoints). Call it once
// the outputs are stored; the input cache is kept.
func (e *Executor) Cleanup(taskID uint64) error {
	e.mu.Lock()
	_, busy := e.running[taskID]
	e.mu.Unlock()
	if busy {
		return fmt.Errorf("cleanup of task %d: %w", taskID, ErrTaskRunning)
	}
	return removeAll(e.TaskDir(taskID))
}

// Run runs one task to completion and returns its result. Cancelling ctx, or running
// past spec.MaxDuration, stops the task (a process is killed with its whole process
// group) and returns an error wrapping context.Cause(ctx) (context.Canceled) or
// ErrMaxDuration. Cancelling ctx with the cause ErrWorkerShutdown instead leaves a
// running PROCESS or CONTAINER task's process group running and returns an error
// wrapping ErrDetached: a later Executor on the same WorkDir adopts it (Adopt). A failed
// PROCESS or CONTAINER task still returns its OutputDir (the captured logs are in its
// LogDir) and, when its command exited by itself, its Files and Logs.
func (e *Executor) Run(ctx context.Context, spec Spec, hooks Hooks) (Result, error) {
	log := e.log.With("task", spec.TaskID, "job", spec.JobID, "shard", spec.Index)
	if err := checkSpec(spec); err != nil {
		return Result{}, err
	}
	if err := e.claim(spec.TaskID); err != nil {
		return Result{}, err
	}
	defer e.release(spec.TaskID)

	if spec.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, spec.MaxDuration, fmt.Errorf("%w (%s)", ErrMaxDuration, spec.MaxDuration))
		defer cancel()
	}
	start := time.Now()
	log.Info("task starting", "runtime", spec.Runtime.String(), "image", spec.Image, "inputs", len(spec.Inputs), "gpus", len(spec.GPUs))
	res, err := e.run(ctx, log, spec, hooks)
	e.pruneInputCache(log, time.Now())
	return e.outcome(ctx, log, spec.TaskID, start, res, err)
}

// claim marks a task as running here; release unmarks it.
func (e *Executor) claim(taskID uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, busy := e.running[taskID]; busy {
		return fmt.Errorf("task %d: %w", taskID, ErrTaskRunning)
	}
	e.running[taskID] = struct{}{}
	return nil
}

func (e *Executor) release(taskID uint64) {
	e.mu.Lock()
	delete(e.running, taskID)
	e.mu.Unlock()
}

// outcome logs how a run (or an adopted run) ended and names a stopped task's cause.
func (e *Executor) outcome(ctx context.Context, log *slog.Logger, taskID uint64, start time.Time, res Result, err error) (Result, error) {
	elapsed := time.Since(start).Round(time.Millisecond)
	if err != nil {
		if errors.Is(err, ErrDetached) {
			log.Info("task left running for the next start of the worker", "elapsed", elapsed)
			return res, fmt.Errorf("task %d: %w", taskID, err)
		}
		if ctx.Err() != nil {
			log.Debug("task stopped", "err", err)
			err = fmt.Errorf("task %d stopped: %w", taskID, context.Cause(ctx))
		}
		log.Warn("task failed", "err", err, "elapsed", elapsed)
		return res, err
	}
	log.Info("task done", "root", hex.EncodeToString(res.Root[:]), "files", len(res.Files), "elapsed", elapsed)
	return res, nil
}

func (e *Executor) run(ctx context.Context, log *slog.Logger, spec Spec, hooks Hooks) (Result, error) {
	d := e.dirs(spec.TaskID)
	if spec.Runtime == markettypes.RUNTIME_CONTAINER {
		if _, _, err := e.containerRuntime(); err != nil { // before any download
			return Result{}, err
		}
	}
	var resume string
	if spec.Resume != nil && spec.Runtime != markettypes.RUNTIME_BUILTIN {
		// Staged in the cache first: the previous checkpoint may live in the directory
		// that prepare empties.
		// A checkpoint that cannot be had (its URI gone with the machine that wrote it, a
		// digest it does not match, more than the task's disk) is the previous run's, not
		// the job's: the task starts from the beginning, to the same result, instead of
		// failing as if its job did (which another operator's run would have confirmed,
		// failing the job for a provider's lost or planted checkpoint).
		p, err := e.stageCheckpoint(ctx, log, spec.Owner, *spec.Resume, spec.MaxDiskBytes)
		switch {
		case err == nil:
			resume = p
		case ctx.Err() != nil:
			return Result{}, err
		default:
			log.Warn("the checkpoint to resume from cannot be used: starting from the beginning", "sha256", spec.Resume.SHA256, "err", err)
		}
	}
	if err := prepare(d); err != nil {
		return Result{}, err
	}
	if spec.Runtime != markettypes.RUNTIME_BUILTIN || spec.Image != markettypes.BuiltinGemm { // gemm reads no input
		if err := e.fetchInputs(ctx, log, spec.Owner, spec.Inputs, d.work, spec.MaxDiskBytes); err != nil {
			return Result{OutputDir: d.output}, err
		}
	}
	switch spec.Runtime {
	case markettypes.RUNTIME_BUILTIN:
		if spec.Image == markettypes.BuiltinGemm {
			return e.runGemm(ctx, spec, d)
		}
		return e.runChecksum(ctx, log, spec, d)
	default:
		var resumed *Checkpoint
		if resume != "" {
			cp, err := placeCheckpoint(ctx, resume, *spec.Resume, d.checkpoint)
			if err != nil {
				return Result{OutputDir: d.output}, err
			}
			resumed = &cp
			log.Info("resuming from checkpoint", "sha256", cp.SHA256, "file", filepath.Base(cp.Path))
		}
		var c command
		if spec.Runtime == markettypes.RUNTIME_PROCESS {
			var err error
			if c, err = e.processCommand(spec, d); err != nil {
				return Result{OutputDir: d.output}, err
			}
		} else {
			var err error
			if c, err = e.containerCommand(ctx, log, spec, d); err != nil {
				return Result{OutputDir: d.output}, err
			}
		}
		if c.image != "" {
			e.images.acquire(c.image)
		}
		runErr := e.execute(ctx, log, spec, c, d, hooks, resumed)
		if c.image != "" {
			e.images.release(ctx, log, c.runtime, c.image, c.fresh, time.Now())
		}
		return e.collect(ctx, log, d, runErr)
	}
}

// collect is the result of a PROCESS or CONTAINER run that ended with runErr: its
// outputs hashed into the manifest root, its logs beside them.
func (e *Executor) collect(ctx context.Context, log *slog.Logger, d taskDirs, runErr error) (Result, error) {
	res := Result{OutputDir: d.output}
	if ctx.Err() != nil || errors.Is(runErr, ErrTaskLost) {
		return res, runErr
	}
	files, logs, err := HashOutputs(ctx, d.output, log)
	res.Files, res.Logs = files, logs
	if runErr != nil {
		return res, runErr
	}
	if err != nil {
		return res, err
	}
	if res.Root, err = ManifestRoot(files); err != nil {
		return res, err
	}
	return res, nil
}

// checkSpec rejects what no runtime could run; the chain has already validated the
// job, so this guards against a broken caller.
func checkSpec(s Spec) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("task %d: %s: %w", s.TaskID, fmt.Sprintf(format, args...), ErrInvalidSpec)
	}
	switch s.Runtime {
	case markettypes.RUNTIME_BUILTIN:
		switch s.Image {
		case markettypes.BuiltinGemm:
			if s.Gemm == nil {
				return bad("a gemm task needs its challenge")
			}
			if err := s.Gemm.Validate(); err != nil {
				return bad("gemm challenge: %v", err)
			}
			if b := s.Builtin; (b.GemmN != 0 || b.GemmR != 0) && (b.GemmN != s.Gemm.N || b.GemmR != s.Gemm.R) {
				return bad("gemm challenge is n = %d, r = %d but the job asks for n = %d, r = %d", s.Gemm.N, s.Gemm.R, b.GemmN, b.GemmR)
			}
		case markettypes.BuiltinChecksum:
			if n := s.Builtin.ChecksumBytes; n == 0 || n > MaxChecksumBytes {
				return bad("builtin.checksum_bytes %d: must be 1 to 2^40", n)
			}
		default:
			return bad("unknown builtin workload %q", s.Image)
		}
	case markettypes.RUNTIME_PROCESS:
		if len(s.Command) == 0 || s.Command[0] == "" {
			return bad("a PROCESS task needs a command")
		}
	case markettypes.RUNTIME_CONTAINER:
		if !pinnedImage.MatchString(s.Image) {
			return bad("image %q: must be pinned by digest, repo@sha256:<64 hex>", s.Image)
		}
	default:
		return bad("unknown runtime %s", s.Runtime)
	}
	if s.MaxDuration < 0 {
		return bad("negative max duration %s", s.MaxDuration)
	}
	for _, g := range s.GPUs {
		if !gpuID.MatchString(g) {
			return bad("GPU id %q: must match %s", g, gpuID)
		}
	}
	for i, e := range s.Env {
		if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") || strings.ContainsRune(e.Value, 0) {
			return bad("env[%d] %q: malformed", i, e.Name)
		}
	}
	for i, in := range s.Inputs {
		if in.Path != "" && !localPath(in.Path) {
			return bad("inputs[%d].path %q: must be a clean relative path", i, in.Path)
		}
		if err := markettypes.ValidateSHA256Hex(in.Sha256); err != nil {
			return bad("inputs[%d].sha256: %v", i, err)
		}
	}
	if r := s.Resume; r != nil {
		if err := markettypes.ValidateSHA256Hex(r.SHA256); err != nil {
			return bad("resume checkpoint sha256: %v", err)
		}
		if r.Path == "" && r.URI == "" {
			return bad("resume checkpoint %s has neither a path nor a URI", r.SHA256)
		}
	}
	return nil
}

// localPath reports whether p is a clean, relative, slash-separated path that stays
// inside its directory.
func localPath(p string) bool {
	return p != "" && p != "." && path.Clean(p) == p && !path.IsAbs(p) && p != ".." &&
		!strings.HasPrefix(p, "../") && !strings.ContainsRune(p, 0) && filepath.IsLocal(filepath.FromSlash(p))
}

// prepare empties and creates the task directories. The input cache is untouched.
func prepare(d taskDirs) error {
	for _, dir := range []string{d.work, d.output, d.checkpoint, d.tmp} {
		if err := removeAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("task directory: %w", err)
		}
	}
	return nil
}

// removeAll is os.RemoveAll that first restores write permission on directories a task
// made read-only.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// progressFile is the name of a task's progress file in LogDir (EnvProgressFile).
const progressFile = "progress"

// Progress is the last non-empty line of a task's progress file, made printable and cut
// to markettypes.MaxProgressLen bytes; "" when the task reported none.
func (e *Executor) Progress(taskID uint64) string {
	f, err := OpenTaskFile(filepath.Join(e.dirs(taskID).output, LogDir, progressFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	const tail = 4096
	off := max(st.Size()-tail, 0)
	buf := make([]byte, min(st.Size(), tail))
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\r\n \t"), "\n")
	return PrintableLine(strings.TrimSpace(lines[len(lines)-1]), markettypes.MaxProgressLen)
}

// OpenTaskFile opens for reading a file that a task can write (its logs, its progress)
// without letting the task point it elsewhere: a link it made to one of the worker's
// files (its key) must not be read for it. Neither the file nor its directory may be a
// symbolic link, and the file must be a regular file with no other name (a hard link).
func OpenTaskFile(p string) (*os.File, error) {
	if st, err := os.Lstat(filepath.Dir(p)); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", filepath.Dir(p))
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		sys, ok := st.Sys().(*syscall.Stat_t)
		switch {
		case !st.Mode().IsRegular():
			err = fmt.Errorf("%s: not a regular file", p)
		case !ok || sys.Nlink != 1:
			err = fmt.Errorf("%s: has another name (a hard link)", p)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// PrintableLine makes s fit the chain's rule for words it stores (a progress line, a
// failure's detail): valid UTF-8 ("?" for what is not), control characters as spaces,
// cut on a character boundary to at most limit bytes.
func PrintableLine(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	for len(s) > limit {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

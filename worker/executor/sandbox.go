package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Defaults of the sandbox's limits.
const (
	DefaultSandboxProcesses = 4096
	DefaultSandboxOpenFiles = 65536
	// NobodyID is the user and group a task runs as when the worker runs as root.
	NobodyID = 65534
)

// Paths of a sandboxed PROCESS task's directories, as the task sees them: the same as a
// container's, and /tmp (HOME and TMPDIR).
const (
	SandboxTmpDir = "/tmp"
)

// DefaultReadOnly are the host directories a sandboxed task sees, read-only, at the same
// place: the system's programs, libraries and configuration. Missing ones are skipped.
var DefaultReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt"}

// Sandbox confines PROCESS tasks with bubblewrap (bwrap): new user, mount, pid, ipc, uts
// and network namespaces; a read-only view of ReadOnly; the task's inputs read-only at
// ContainerInputDir (its working directory), its output, checkpoint and tmp directories
// the only writable places, the root read-only; a minimal /dev with only its own GPUs'
// device nodes; no capabilities; killed with everything it started when the task ends:
// the pid namespace's init (bwrap's) stays in the task's process group, which the
// executor kills, and the kernel kills the whole namespace with it, processes that made
// sessions of their own included (so no --new-session: the task has no terminal to
// inject into). The worker's home, keys, state, run records and other tasks'
// files are not in its view. Limits are rlimits: RLIMIT_DATA (memory), RLIMIT_NPROC in
// the task's own user namespace (processes and threads), RLIMIT_NOFILE, RLIMIT_FSIZE, no
// core dumps; with Cgroup, a cgroup v2 of the task's own with memory, pids and CPU limits.
// A worker running as root runs tasks as UID:GID (nobody), since root is
// exempt from RLIMIT_NPROC and owns the worker's files.
type Sandbox struct {
	// Required makes New fail when PROCESS tasks cannot be sandboxed here (a worker that
	// accepts PROCESS jobs); otherwise only PROCESS tasks fail, with ErrNoSandbox.
	Required bool
	// Off runs PROCESS tasks unconfined, as the worker's own user, with the worker's view
	// of the machine and host paths: for the executor's own tests only (flops-worker
	// never sets it).
	Off bool
	// Bwrap is the bubblewrap binary (empty: bwrap in PATH).
	Bwrap string
	// ReadOnly are the host directories the task sees read-only (nil: DefaultReadOnly).
	// None may hold the work directory or Private.
	ReadOnly []string
	// Private are paths that must stay out of a task's view (the worker's state, keys and
	// configuration): New refuses a ReadOnly directory that holds one.
	Private []string
	// Network gives tasks the host's network; by default a task has a network namespace
	// of its own with only a loopback interface.
	Network bool
	// MemoryPerGPU bounds each process's data (heap and private writable mappings,
	// RLIMIT_DATA), in bytes, per GPU the task is pinned to (a task without a GPU counts
	// as one). 0: the machine's memory.
	MemoryPerGPU uint64
	// Processes bounds a task's processes and threads together (0: DefaultSandboxProcesses).
	Processes uint64
	// OpenFiles bounds each process's open files (0: DefaultSandboxOpenFiles).
	OpenFiles uint64
	// MaxFileBytes bounds the size of any file a task writes (RLIMIT_FSIZE; 0: none).
	MaxFileBytes uint64
	// Cgroup is a cgroup v2 directory delegated to the worker (e.g. systemd's Delegate=yes
	// for its service, or one made for it): each PROCESS task then runs in a child cgroup
	// of its own, placed in it at fork, with memory.max (MemoryPerGPU x GPUs, no swap),
	// pids.max (Processes) and cpu.max (CPUsPerGPU x GPUs) for the controllers it offers,
	// and the whole cgroup is killed when the task ends. Empty: rlimits only.
	Cgroup string
	// UID and GID a task runs as when the worker is root (0: NobodyID).
	UID, GID int
	// CPUsPerGPU bounds a task's CPUs per GPU it is pinned to: a CONTAINER task's through
	// the runtime's --cpus, a PROCESS task's through cpu.max when there is a Cgroup
	// (rlimits cannot bound it). 0: no bound.
	CPUsPerGPU uint64
	// Devices are the device nodes of the GPUs a task is pinned to (gpu.DeviceNodes), the
	// ones that do not exist skipped; each is bound at its own path if under /dev, else
	// at /dev/<its name>. nil: none.
	Devices func(gpus []string) ([]string, error)
}

// MachineMemory is the machine's physical memory in bytes (0 if unknown).
func MachineMemory() uint64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// sandboxTools are the resolved binaries of the sandbox.
type sandboxTools struct {
	bwrap, prlimit, setpriv string
	err                     error // why PROCESS tasks cannot be sandboxed
}

// setupSandbox fills in the sandbox's defaults and, unless it is off, finds its binaries
// and checks that tasks can be confined: the error is New's when s.Required, else the
// error of every PROCESS task.
func setupSandbox(s *Sandbox, workDir string) (sandboxTools, error) {
	if s.ReadOnly == nil {
		s.ReadOnly = DefaultReadOnly
	}
	if s.UID == 0 {
		s.UID = NobodyID
	}
	if s.GID == 0 {
		s.GID = NobodyID
	}
	if s.Processes == 0 {
		s.Processes = DefaultSandboxProcesses
	}
	if s.OpenFiles == 0 {
		s.OpenFiles = DefaultSandboxOpenFiles
	}
	if s.MemoryPerGPU == 0 {
		s.MemoryPerGPU = MachineMemory()
	}
	if s.Off {
		return sandboxTools{}, nil
	}
	var t sandboxTools
	if s.Cgroup != "" {
		if err := checkCgroup(s.Cgroup); err != nil {
			return t, err
		}
	}
	var err error
	name := s.Bwrap
	if name == "" {
		name = "bwrap"
	}
	if t.bwrap, err = exec.LookPath(name); err != nil {
		return t, fmt.Errorf("%w: %s not found (apt-get install bubblewrap): %w", ErrNoSandbox, name, err)
	}
	if t.prlimit, err = exec.LookPath("prlimit"); err != nil {
		return t, fmt.Errorf("%w: prlimit (util-linux) not found: %w", ErrNoSandbox, err)
	}
	if os.Geteuid() == 0 {
		if t.setpriv, err = exec.LookPath("setpriv"); err != nil {
			return t, fmt.Errorf("%w: setpriv (util-linux) not found: %w", ErrNoSandbox, err)
		}
	}
	if err := reachable(workDir); err != nil {
		return t, err
	}
	inside := false
	for _, ro := range s.ReadOnly {
		if !filepath.IsAbs(ro) || filepath.Clean(ro) == "/" {
			return t, fmt.Errorf("%w: read-only directory %q: must be an absolute path other than /", ErrNoSandbox, ro)
		}
		for _, p := range append([]string{workDir}, s.Private...) {
			if under(p, ro) {
				return t, fmt.Errorf("%w: %s is under %s, which tasks see: move it", ErrNoSandbox, p, ro)
			}
		}
		inside = inside || under(t.prlimit, ro)
	}
	if !inside {
		return t, fmt.Errorf("%w: %s is not under a read-only directory: tasks need it", ErrNoSandbox, t.prlimit)
	}
	return t, nil
}

// reachable makes the task directories under workDir reachable by the sandbox's user
// when the worker runs as root: bubblewrap, run as that user, opens them to bind them.
// workDir and its tasks directory get o+x (enter, not list); a parent directory without
// it is an error that says what to do. Only bubblewrap ever walks the path as that user:
// a task sees none of the host's directories.
func reachable(workDir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	for _, d := range []string{workDir, filepath.Join(workDir, "tasks")} {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNoSandbox, err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("%w: %w", ErrNoSandbox, err)
			}
		}
	}
	for d := filepath.Dir(workDir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrNoSandbox, err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%w: the sandbox's user cannot reach the work directory %s: %s needs o+x (chmod o+x %s; it lets that user enter it, not list it), or move the work directory", ErrNoSandbox, workDir, d, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// under reports whether p is dir or lies under it, symbolic links resolved.
func under(p, dir string) bool {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// sandboxed wraps a task's argv in the sandbox: setpriv (root only), prlimit and bwrap
// outside, prlimit --nproc inside (RLIMIT_NPROC counts per user namespace). bwrap binds
// the task's directories as the sandbox's user, who can reach them (reachable).
func (e *Executor) sandboxed(spec Spec, d taskDirs, argv []string) ([]string, error) {
	s, t := e.opts.Sandbox, e.sandbox
	if t.err != nil {
		return nil, t.err
	}
	if err := os.Chmod(d.root, 0o711); err != nil { // enter, not list (reachable)
		return nil, fmt.Errorf("task directory: %w", err)
	}
	var out []string
	if os.Geteuid() == 0 {
		out = append(out, t.setpriv, "--reuid="+strconv.Itoa(s.UID), "--regid="+strconv.Itoa(s.GID),
			"--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--")
	}
	gpus := uint64(max(len(spec.GPUs), 1))
	out = append(out, t.prlimit, "--core=0", "--nofile="+strconv.FormatUint(capped(syscall.RLIMIT_NOFILE, s.OpenFiles), 10))
	if s.MemoryPerGPU > 0 {
		out = append(out, "--data="+strconv.FormatUint(s.MemoryPerGPU*gpus, 10))
	}
	if s.MaxFileBytes > 0 {
		out = append(out, "--fsize="+strconv.FormatUint(s.MaxFileBytes, 10))
	}
	// one hostname for every task on every machine: a job that read the machine's could
	// tell its runs apart (TaskHostname)
	out = append(out, "--", t.bwrap, "--unshare-all", "--hostname", TaskHostname, "--die-with-parent", "--cap-drop", "ALL")
	if s.Network {
		out = append(out, "--share-net")
	}
	for _, ro := range s.ReadOnly {
		out = append(out, "--ro-bind-try", ro, ro)
	}
	out = append(out, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm")
	if len(spec.GPUs) > 0 && s.Devices != nil {
		nodes, err := s.Devices(spec.GPUs)
		if err != nil {
			return nil, fmt.Errorf("%w: device nodes of the task's GPUs: %w", ErrNoSandbox, err)
		}
		for _, n := range nodes {
			out = append(out, "--dev-bind-try", n, devicePath(n))
		}
	}
	out = append(out,
		"--ro-bind", d.work, ContainerInputDir,
		"--bind", d.output, ContainerOutputDir,
		"--bind", d.checkpoint, ContainerCheckpointDir,
		"--bind", d.tmp, SandboxTmpDir,
		"--remount-ro", "/", "--chdir", ContainerInputDir,
		"--", t.prlimit, "--nproc="+strconv.FormatUint(s.Processes, 10), "--")
	return append(out, argv...), nil
}

// capped is want, at most the worker's own hard limit of a resource (which an
// unprivileged process cannot raise).
func capped(resource int, want uint64) uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(resource, &l); err == nil && l.Max < want {
		return l.Max
	}
	return want
}

// devicePath is where a device node is seen in the sandbox.
func devicePath(host string) string {
	if strings.HasPrefix(host, "/dev/") {
		return host
	}
	return "/dev/" + filepath.Base(host)
}

// giveToTask makes a sandboxed task's writable directories its own when the worker is
// root (the task runs as Sandbox.UID): the directories and what is in them (a placed
// checkpoint). The worker, root, still reads and removes them.
func (e *Executor) giveToTask(dirs ...string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid := e.opts.Sandbox.UID, e.opts.Sandbox.GID
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("task directory owner: %w", err)
		}
	}
	return nil
}

package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// DefaultDiskPoll is how often the disk a running PROCESS or CONTAINER task fills is
// measured (Options.DiskPoll).
const DefaultDiskPoll = 2 * time.Second

// A task's disk (Spec.MaxDiskBytes) is what its writable directories hold: the output
// directory (its captured logs included, which it writes while it runs), the
// checkpoint directory and the scratch directory (HOME and TMPDIR of a PROCESS task).
// A CONTAINER task's root is read-only and its /tmp is in memory, which its memory
// limit covers. The kernel has no per-directory quota that an unprivileged worker can
// set on any filesystem, so the worker measures, as Kubernetes enforces a pod's
// ephemeral-storage limit: every DiskPoll it adds up the disk blocks of the entries
// (st_blocks, as du counts them: a sparse file takes what it wrote, a file linked twice
// counts once) and stops the task once they pass its limit, or once it made more files
// than a result may hold (MaxOutputFiles), which would fill the filesystem's inodes
// instead. Between two measures a task can write past its limit for up to DiskPoll at the
// disk's speed (watchDisk: a task of very many files is measured less often, but a disk
// filling faster than it may write brings the measure forward); RLIMIT_FSIZE
// (Sandbox.MaxFileBytes) still bounds each file.

// diskUse is what a task's directories hold.
type diskUse struct {
	bytes uint64 // disk blocks x 512
	files int    // entries, directories included
}

// overDisk measures the task's directories and says how they exceed maxBytes or
// maxFiles ("" when they do not). It stops counting as soon as they do. What the worker
// cannot measure because of the task is an excess too: a directory made unreadable, or
// paths nested past the system's limit on a path (PATH_MAX), under which a job would
// otherwise hide what it writes (the result's hashing would fail on either as well).
func overDisk(dirs []string, maxBytes uint64, maxFiles int) (string, diskUse, error) {
	m := diskMeasure{maxBytes: maxBytes, maxFiles: maxFiles, linked: map[[2]uint64]bool{}}
	for _, dir := range dirs {
		info, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return "", m.use, err
		}
		m.top = dir
		err = m.add(info)
		if err == nil && info.IsDir() {
			err = m.dir(dir)
		}
		if errors.Is(err, errOverDisk) {
			return m.why, m.use, nil
		} else if err != nil {
			return "", m.use, err
		}
	}
	return "", m.use, nil
}

// errOverDisk ends a measure that found an excess (diskMeasure.why says which).
var errOverDisk = errors.New("over its disk")

// diskMeasure is one measure of a task's directories.
type diskMeasure struct {
	maxBytes uint64
	maxFiles int
	use      diskUse
	linked   map[[2]uint64]bool // files with more than one link, counted once
	top      string             // the directory being measured (overDisk's dirs)
	why      string
}

// over ends the measure: the directories exceed what the task may hold, for why.
func (m *diskMeasure) over(format string, args ...any) error {
	m.why = fmt.Sprintf(format, args...)
	return errOverDisk
}

// add counts one entry.
func (m *diskMeasure) add(info fs.FileInfo) error {
	m.use.files++
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		key := [2]uint64{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is not uint64 on every platform
		if !info.IsDir() && st.Nlink > 1 && m.linked[key] {
			return nil
		} else if !info.IsDir() && st.Nlink > 1 {
			m.linked[key] = true
		}
		m.use.bytes += uint64(st.Blocks) * 512
	} else {
		m.use.bytes += uint64(max(info.Size(), 0))
	}
	switch {
	case m.maxBytes > 0 && m.use.bytes > m.maxBytes:
		return m.over("more than %d bytes of disk", m.maxBytes)
	case m.use.files > m.maxFiles:
		return m.over("more than %d files", m.maxFiles)
	}
	return nil
}

// taskMade says whether err is one the task's own doing causes, and ends the measure
// then: a path it made too long, a directory it made unreadable.
func (m *diskMeasure) taskMade(p string, err error) error {
	switch {
	case errors.Is(err, syscall.ENAMETOOLONG):
		return m.over("paths longer than the system allows (%d bytes and more)", len(p))
	case errors.Is(err, fs.ErrPermission):
		// named from the task's directory (output/..., tmp/...): the report's detail is
		// public, the machine's own paths are not
		rel, relErr := filepath.Rel(filepath.Dir(m.top), p)
		if relErr != nil {
			rel = filepath.Base(p)
		}
		return m.over("%s cannot be read by the worker", rel)
	}
	return err
}

// dir counts the entries of directory p and then those of its subdirectories: one
// directory is open at a time, whatever the depth.
func (m *diskMeasure) dir(p string) error {
	subdirs, err := m.list(p)
	if err != nil {
		return err
	}
	for _, name := range subdirs {
		if err := m.dir(filepath.Join(p, name)); err != nil {
			return err
		}
	}
	return nil
}

// list counts the entries of directory p, read 1,024 at a time, and returns the names of
// its subdirectories: no more names are held than entries were counted (a directory of
// millions of entries is not read whole before the count stops). An entry the task
// removed or moved since it was listed is not counted.
func (m *diskMeasure) list(p string) ([]string, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
		return nil, nil // moved, or replaced by a file or a link, since it was listed
	case err != nil:
		return nil, m.taskMade(p, err)
	}
	defer f.Close()
	var subdirs []string
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			info, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, m.taskMade(filepath.Join(p, e.Name()), err)
			}
			if err := m.add(info); err != nil {
				return nil, err
			}
			if info.IsDir() {
				subdirs = append(subdirs, e.Name())
			}
		}
		if errors.Is(err, io.EOF) {
			return subdirs, nil
		} else if err != nil {
			return nil, m.taskMade(p, err)
		}
	}
}

// diskExcess measures a task's writable directories against maxBytes: an error wrapping
// ErrDiskQuota when they exceed it (overDisk), nil when they do not, with what they hold
// (measured false when the measure itself failed, which is logged).
func diskExcess(log *slog.Logger, d taskDirs, maxBytes uint64) (use diskUse, measured bool, excess error) {
	why, use, err := overDisk([]string{d.output, d.checkpoint, d.tmp}, maxBytes, MaxOutputFiles)
	switch {
	case err != nil:
		log.Warn("task disk not measured", "err", err)
		return use, false, nil
	case why != "":
		log.Warn("task filled its disk", "limit_bytes", maxBytes, "why", why, "counted_bytes", use.bytes, "counted_files", use.files)
		return use, true, fmt.Errorf("%w: its directories hold %s", ErrDiskQuota, why)
	}
	return use, true, nil
}

// watchDisk measures a running task's directories until ctx ends, and stops the task
// (stop, with diskExcess's error) once they exceed maxBytes. A measure that fails for
// another reason is logged and tried again. Measures follow nextDiskPoll: a task of
// many files is measured less often rather than taking the worker's CPU. So that such a
// task cannot write freely between two measures, the filesystem's free space is read
// every DiskPoll (one statfs), and a drop since the last measure larger than what the
// task may still write brings the next measure forward (measureDue).
func (e *Executor) watchDisk(ctx context.Context, log *slog.Logger, d taskDirs, maxBytes uint64, stop context.CancelCauseFunc) {
	t := time.NewTicker(e.opts.DiskPoll)
	defer t.Stop()
	var next time.Time
	var held, freeThen uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		freeNow, _ := FreeSpace(d.output) // 0, unknown, when it cannot be read
		if !measureDue(now, next, freeThen, freeNow, maxBytes-min(held, maxBytes)) {
			continue
		}
		use, measured, excess := diskExcess(log, d, maxBytes)
		if excess != nil {
			stop(excess)
			return
		}
		if measured {
			held = use.bytes
		}
		freeThen, next = freeNow, now.Add(nextDiskPoll(e.opts.DiskPoll, time.Since(now)))
	}
}

// measureDue says whether a task's disk is measured now: its next measure is due, or the
// filesystem lost more free space since the last one (freeThen, then freeNow; 0 when
// unknown) than the task may still write (headroom). Any writer's growth counts, the
// task's or another's: only a disk that fills that fast brings measures forward.
func measureDue(now, next time.Time, freeThen, freeNow, headroom uint64) bool {
	return !now.Before(next) || (freeThen > 0 && freeNow > 0 && freeThen > freeNow && freeThen-freeNow > headroom)
}

// FreeSpace is what an unprivileged user may still write on the filesystem that holds
// dir (statfs: available blocks x block size).
func FreeSpace(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil //nolint:gosec,unconvert // Bsize is positive, and not int64 on every platform
}

// diskPollShare bounds the CPU a task's measures take: one core's 1/diskPollShare.
const diskPollShare = 10

// nextDiskPoll is the wait before the next measure of a task's disk, after one that
// took took: DiskPoll, or diskPollShare times the measure when that is longer (100,000
// entries took 0.25-0.32 s to walk here: a million are measured about every 30 s).
func nextDiskPoll(poll, took time.Duration) time.Duration {
	return max(poll, diskPollShare*took)
}

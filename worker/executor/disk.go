package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
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
// disk's speed; RLIMIT_FSIZE (Sandbox.MaxFileBytes) still bounds each file.

// diskUse is what a task's directories hold.
type diskUse struct {
	bytes uint64 // disk blocks x 512
	files int    // entries, directories included
}

// overDisk measures the task's directories and says how they exceed maxBytes or
// maxFiles ("" when they do not). It stops counting as soon as they do. A
// directory it cannot read is an excess too: the task made it unreadable, and its
// contents could be anything (the result's hashing would fail on it as well).
func overDisk(dirs []string, maxBytes uint64, maxFiles int) (string, diskUse, error) {
	var use diskUse
	linked := map[[2]uint64]bool{}
	errOver := errors.New("over")
	var why string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed by the task while it was listed
				}
				if errors.Is(err, fs.ErrPermission) {
					why = fmt.Sprintf("%s cannot be read by the worker", p)
					return errOver
				}
				return err
			}
			info, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			} else if err != nil {
				return err
			}
			use.files++
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				if !d.IsDir() && st.Nlink > 1 {
					key := [2]uint64{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is not uint64 on every platform
					if linked[key] {
						return nil
					}
					linked[key] = true
				}
				use.bytes += uint64(st.Blocks) * 512
			} else {
				use.bytes += uint64(max(info.Size(), 0))
			}
			switch {
			case maxBytes > 0 && use.bytes > maxBytes:
				why = fmt.Sprintf("more than %d bytes of disk", maxBytes)
				return errOver
			case use.files > maxFiles:
				why = fmt.Sprintf("more than %d files", maxFiles)
				return errOver
			}
			return nil
		})
		if errors.Is(err, errOver) {
			return why, use, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", use, err
		}
	}
	return "", use, nil
}

// diskExcess measures a task's writable directories against maxBytes: an error wrapping
// ErrDiskQuota when they exceed it (overDisk), nil when they do not, and the measure's
// own error otherwise (measured false).
func diskExcess(log *slog.Logger, d taskDirs, maxBytes uint64) (excess error, measured bool) {
	why, use, err := overDisk([]string{d.output, d.checkpoint, d.tmp}, maxBytes, MaxOutputFiles)
	switch {
	case err != nil:
		log.Warn("task disk not measured", "err", err)
		return nil, false
	case why != "":
		log.Warn("task filled its disk", "limit_bytes", maxBytes, "why", why, "counted_bytes", use.bytes, "counted_files", use.files)
		return fmt.Errorf("%w: its directories hold %s", ErrDiskQuota, why), true
	}
	return nil, true
}

// watchDisk measures a running task's directories every DiskPoll until ctx ends, and
// stops the task (stop, with diskExcess's error) once they exceed maxBytes. A measure
// that fails for another reason is logged and tried again.
func (e *Executor) watchDisk(ctx context.Context, log *slog.Logger, d taskDirs, maxBytes uint64, stop context.CancelCauseFunc) {
	t := time.NewTicker(e.opts.DiskPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if excess, _ := diskExcess(log, d, maxBytes); excess != nil {
			stop(excess)
			return
		}
	}
}

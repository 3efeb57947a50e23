// Package spool keeps the folders where uploads are spooled to disk (the
// body of a request, a stored workbook written out to be read again, and
// what the parsers put beside them), and sweeps those a crashed process
// left behind: they hold raw lists.
//
// A folder is created under a name of its own prefix, and locked (flock)
// for as long as its upload lives: the kernel releases the lock when the
// process dies, however it dies, so a sweep tells a folder in use from a
// leftover by trying its lock, not by guessing from its age. Several
// processes may share one parent folder.
package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Prefix begins the name of every spool folder: a sweep removes only
// these.
const Prefix = "enrichq-upload-"

// newPrefix begins a folder being made, before it is locked and renamed to
// Prefix: a sweep never sees an unlocked folder of a live upload.
const newPrefix = ".enrichq-upload-new-"

// NewLeftAfter is how long a folder may stay half-made (a crash between its
// creation and its lock, which leaves it empty) before a sweep removes it.
const NewLeftAfter = time.Hour

// Folder is a spool folder, locked until Remove.
type Folder struct {
	Path string
	lock *os.File
}

// New makes a spool folder under parent ("": the system's temporary
// directory) and locks it.
func New(parent string) (*Folder, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	made, err := os.MkdirTemp(parent, newPrefix)
	if err != nil {
		return nil, fmt.Errorf("spool: a folder: %w", err)
	}
	lock, err := os.Open(made)
	if err == nil {
		err = lockFile(lock, true)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		_ = os.RemoveAll(made)
		return nil, fmt.Errorf("spool: locking a folder: %w", err)
	}
	path := filepath.Join(parent, Prefix+strings.TrimPrefix(filepath.Base(made), newPrefix))
	if err := os.Rename(made, path); err != nil {
		lock.Close()
		_ = os.RemoveAll(made)
		return nil, fmt.Errorf("spool: a folder: %w", err)
	}
	return &Folder{Path: path, lock: lock}, nil
}

// Remove deletes the folder with everything in it, and unlocks it. A nil
// Folder is nothing to remove; a second call does nothing.
func (f *Folder) Remove() {
	if f == nil || f.lock == nil {
		return
	}
	_ = os.RemoveAll(f.Path)
	_ = f.lock.Close() // releases the lock
	f.lock = nil
}

// Sweep removes the spool folders under parent ("": the system's temporary
// directory) that no live process holds, and those left half-made for
// longer than NewLeftAfter before now. It returns how many it removed.
func Sweep(parent string, now time.Time) (int, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("spool: sweep %s: %w", parent, err)
	}
	var removed int
	var errs []error
	for _, e := range entries {
		path := filepath.Join(parent, e.Name())
		switch {
		case !e.IsDir():
			continue
		case strings.HasPrefix(e.Name(), newPrefix):
			if fi, err := e.Info(); err != nil || now.Sub(fi.ModTime()) < NewLeftAfter {
				continue
			}
		case strings.HasPrefix(e.Name(), Prefix):
			if held, err := inUse(path); err != nil || held {
				continue
			}
		default:
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// inUse reports whether a live process holds the folder's lock. A folder
// that is gone is not in use (and nothing is left to remove).
func inUse(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close() // releases the lock taken here
	switch err := lockFile(f, false); {
	case errors.Is(err, errLocked):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// errLocked: another open file holds the lock.
var errLocked = errors.New("spool: locked")

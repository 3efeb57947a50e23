//go:build unix

package spool

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock of f, waiting for it when wait, else
// failing with errLocked while another open file holds it.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}

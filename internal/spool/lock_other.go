//go:build !unix

package spool

import "os"

// lockFile cannot lock here: every folder counts as held, and a sweep
// removes only half-made ones.
func lockFile(_ *os.File, wait bool) error {
	if wait {
		return nil
	}
	return errLocked
}

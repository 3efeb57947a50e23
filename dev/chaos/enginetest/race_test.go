//go:build race

package enginetest

// raceBuild: the test runs under the race detector (make test), and so do
// the binaries it builds, from the packages the test build compiled already.
const raceBuild = true

// Package enginetest runs enrichq's real binaries (api, worker, scheduler,
// built by the test) against the engines a deployment past one machine
// runs: Redis behind Sentinel with a primary killed mid-job, and many
// workers, schedulers and API processes sharing one vendor key. Each test
// ends with the invariants of dev/chaos/rig (every row terminal, none
// lost, none charged twice, the ledger equal to the fake vendor's bill) and
// prints what it measured.
//
// The package holds only tests. They take tens of seconds each: `go test
// -short` skips them, `make test` runs them; a missing engine binary skips
// a test, naming the Debian package that has it.
package enginetest

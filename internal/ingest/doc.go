// Package ingest parses and validates an untrusted job upload (a CSV file or
// the JSON body of POST /v1/jobs) into lookups, one per vendor lookup to run.
//
// Everything here is bounded: the whole upload by Limits.MaxBytes, one CSV
// record by the number of columns times Limits.MaxCellBytes, the number of
// lookups by Limits.MaxLookups and the collected errors by Limits.MaxErrors.
// Rows stream through an emit callback; once any row is invalid nothing more
// is emitted, and the caller (which stores lookups inside one transaction)
// rolls back on the returned error.
//
// Every rejection is an *Error whose Code maps to an HTTP status and whose
// Details name the row and column of each problem. The package does not touch
// HTTP or the database.
package ingest

// Package ingest parses and validates an untrusted job upload (a CSV or TSV
// file in UTF-8, UTF-16 or Windows-1252, an .xlsx workbook, or the JSON body
// of POST /v1/jobs) into lookups, one per vendor lookup to run. Columns are
// matched to fields as CRM exports name them, or by an explicit mapping
// (fields.go); docs/uploads.md is the user's side of it.
//
// Everything here is bounded: the whole upload by Limits.MaxBytes, one CSV
// record by the number of columns times Limits.MaxCellBytes, a workbook by
// what it may unzip to and hold (xlsx.go), the number of lookups by
// Limits.MaxLookups and the collected errors by Limits.MaxErrors. Rows stream
// through an emit callback; once any row is invalid nothing more is emitted,
// and the caller (which stores lookups inside one transaction) rolls back on
// the returned error.
//
// Every rejection is an *Error whose Code maps to an HTTP status and whose
// Details name the row and column of each problem (the column as the file
// names it). The package does not touch HTTP or the database.
package ingest

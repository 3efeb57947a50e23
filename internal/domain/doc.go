// Package domain holds the named types of enrichq's domain: job states, row
// states with their allowed transitions, stages and input kinds. It is a leaf:
// every layer (store, ingest, enrich, jobs, httpapi) imports it, and it
// imports nothing of enrichq. The values are the ones stored in Postgres and
// shown in the API, so a constant's text never changes.
package domain

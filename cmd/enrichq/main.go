// Command enrichq is the command-line client of enrichq's submit API: upload
// a list, watch it run, read its results.
//
//	enrichq submit companies.csv --roles "VP Sales,CTO" --lookups profile,email --budget 5000 --wait
//	enrichq results JOB --format csv > results.csv
//
// The API's URL and key come from --api and --key, else ENRICHQ_API_URL
// (default http://127.0.0.1:8080) and ENRICHQ_API_KEY. Progress and messages
// go to stderr, so stdout can be piped. The exit status is 0 when the command
// did what it says, 1 when it failed (the reason, one line, on stderr), 2 for
// a usage error and 130 when interrupted. `enrichq help` lists the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "enrichq:", err)
	}
	os.Exit(exitCode(err))
}

// DefaultAPIURL is the API's URL when neither --api nor ENRICHQ_API_URL says.
const DefaultAPIURL = "http://127.0.0.1:8080"

// usageError is a command line that cannot run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode is the process's exit status for the error run returned.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	case errors.Is(err, context.Canceled):
		return 130
	default:
		return 1
	}
}

const usage = `enrichq: the command-line client of the enrichq API

Usage:
  enrichq [--api URL] [--key KEY] COMMAND [ARGUMENTS] [FLAGS]

Commands:
  submit FILE.csv    upload a list (- reads stdin) and print the job's id; with --wait,
                     show progress until the job ends, then a summary
  estimate FILE.csv  what a list would cost and take (a dry run: nothing is stored)
  status JOB         a job's state, rows and credits
  list               the latest jobs, newest first
  results JOB        a job's results to stdout (--format csv|ndjson|json)
  cancel JOB         cancel a job: rows not started are skipped
  feed               every job's results after a feed position, as ndjson (for ETL)
  mcp                an MCP server on stdin/stdout for an AI assistant (docs/mcp.md)
  audit              the audit log after a position: downloads, feed reads, erasures,
                     retention purges, key and budget changes (--json for ndjson)
  watch SUBCOMMAND   lists kept fresh: create (with a month's estimate), list, show, run,
                     changes, pause, resume, delete (enrichq watch -h)
  vendors            where the money goes: this month's spend per vendor, found of asked
                     per segment and stage, the order in use, warnings (--json)

"enrichq COMMAND -h" describes a command's flags.

Environment:
  ENRICHQ_API_URL    the API's base URL (default http://127.0.0.1:8080); --api overrides it
  ENRICHQ_API_KEY    the API key; --key overrides it

Exit status: 0 done, 1 failed (the reason on stderr), 2 usage error, 130 interrupted.
`

// env is what every command gets: the streams, the environment, and the
// API connection options shared by all commands.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	api    string // --api, else ENRICHQ_API_URL, else DefaultAPIURL
	key    string // --key, else ENRICHQ_API_KEY
}

type command struct {
	run     func(ctx context.Context, e *env, args []string) error
	summary string
}

var commands = map[string]command{
	"submit":   {runSubmit, "submit FILE.csv [flags]: upload a list; --wait shows progress until the job ends"},
	"estimate": {runEstimate, "estimate FILE.csv [flags]: what a list would cost and take; nothing is stored"},
	"upload":   {runUpload, "upload FILE.csv [flags]: store a list once, print its id for estimate and submit --upload ID"},
	"status":   {runStatus, "status JOB [flags]: a job's state, rows and credits"},
	"list":     {runList, "list [flags]: the latest jobs, newest first"},
	"results":  {runResults, "results JOB [flags]: a job's results to stdout"},
	"cancel":   {runCancel, "cancel JOB [flags]: cancel a job; rows not started are skipped"},
	"feed":     {runFeed, "feed [flags]: every job's results after a feed position, as ndjson"},
	"mcp":      {runMCP, "mcp [flags]: an MCP server on stdin/stdout for an AI assistant, relaying to the API's /mcp"},
	"watch":    {runWatch, "watch SUBCOMMAND: lists kept fresh under a monthly cap, and what changed (enrichq watch -h)"},
	"vendors":  {runVendors, "vendors [flags]: this month's spend per vendor, hit rates, the order in use, warnings"},
	"audit":    {runAudit, "audit [flags]: the audit log (downloads, feed reads, erasures, purges, key and budget changes)"},
}

// run runs the command line args (args[0] is the program's name).
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("enrichq", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	api := fs.String("api", "", "")
	key := fs.String("key", "", "")
	if len(args) > 0 {
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return nil
		}
		return usagef("%v (enrichq help lists the commands)", err)
	}
	e.api, e.key = *api, *key
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		if len(rest) > 0 {
			if _, ok := commands[rest[0]]; ok {
				return commands[rest[0]].run(ctx, e, []string{"-h"})
			}
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd, ok := commands[name]
	if !ok {
		return usagef("unknown command %q (enrichq help lists the commands)", name)
	}
	return cmd.run(ctx, e, rest)
}

// flags is a command's flag set, with the connection flags every command takes.
type flags struct {
	*flag.FlagSet
	e        *env
	name     string
	synopsis string
	api, key *string
}

func newFlags(e *env, name, synopsis string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &flags{FlagSet: fs, e: e, name: name, synopsis: synopsis}
	f.api = fs.String("api", "", "the API's base URL (default ENRICHQ_API_URL, else "+DefaultAPIURL+")")
	f.key = fs.String("key", "", "the API key (default ENRICHQ_API_KEY)")
	return f
}

// parse parses args, flags before, between and after the positional
// arguments ("--" ends the flags), and checks there are nargs positionals.
// It returns flag.ErrHelp after printing the help for -h.
// parse parses args and wants nargs positional arguments (any number when
// nargs < 0: the caller checks them).
func (f *flags) parse(args []string, nargs int) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.help(f.e.stdout)
				return nil, flag.ErrHelp
			}
			return nil, usagef("%s: %v (enrichq %s -h describes its flags)", f.name, err, f.name)
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if nargs >= 0 && len(pos) != nargs {
		return nil, usagef("usage: enrichq %s (enrichq %s -h describes its flags)", f.synopsis, f.name)
	}
	if *f.api != "" {
		f.e.api = *f.api
	}
	if *f.key != "" {
		f.e.key = *f.key
	}
	return pos, nil
}

func (f *flags) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: enrichq %s\n\nFlags:\n", f.synopsis)
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// client returns the API client of the connection options.
func (e *env) client() (*client, error) {
	base := e.api
	if base == "" {
		base = e.getenv("ENRICHQ_API_URL")
	}
	if base == "" {
		base = DefaultAPIURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("the API URL %q is not an http(s) URL (--api or ENRICHQ_API_URL)", base)
	}
	key := e.key
	if key == "" {
		key = e.getenv("ENRICHQ_API_KEY")
	}
	if key == "" {
		return nil, usagef("no API key: set ENRICHQ_API_KEY or pass --key")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return newClient(u, key), nil
}

// helpOK is err, except that asking for help (-h) is no failure.
func helpOK(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress modes of submit --wait.
const (
	progressBar   = "bar"   // a live bar (for a terminal)
	progressPlain = "plain" // a line when the state changes, else now and then (for logs)
	progressNone  = "none"
)

// plainEvery is how often plain progress writes a line while nothing but
// the counts changes.
const plainEvery = 10 * time.Second

func progressMode(flag string, stderr io.Writer) (string, error) {
	switch flag {
	case progressBar, progressPlain, progressNone:
		return flag, nil
	case "auto", "":
		if isTerminal(stderr) {
			return progressBar, nil
		}
		return progressPlain, nil
	}
	return "", usagef("--progress %q is not bar, plain, none or auto", flag)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress shows a job's progress on stderr while submit --wait polls it.
type progress struct {
	mode  string
	w     io.Writer
	bar   *progressbar.ProgressBar
	start time.Time
	// plain mode
	lastLine  time.Time
	lastState string
	lastDone  int
	firstDone int
}

func newProgress(mode string, w io.Writer, st jobStatus) *progress {
	p := &progress{mode: mode, w: w, start: time.Now(), firstDone: st.done(), lastDone: -1}
	if mode == progressBar {
		p.bar = progressbar.NewOptions64(int64(max(st.Rows.Total, 1)),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(barDescription(st)),
			progressbar.OptionShowCount(),
			progressbar.OptionShowTotalBytes(true),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
		_ = p.bar.Set64(int64(st.done()))
	}
	p.update(st)
	return p
}

// barDescription is the text before the bar: state and credits.
func barDescription(st jobStatus) string {
	credits := fmt.Sprintf("%d credits", st.Credits.Spent)
	if st.Credits.Budget != nil {
		credits = fmt.Sprintf("%d/%d credits", st.Credits.Spent, *st.Credits.Budget)
	}
	return fmt.Sprintf("%-9s %s", st.State, credits)
}

func (p *progress) update(st jobStatus) {
	switch p.mode {
	case progressBar:
		p.bar.Describe(barDescription(st))
		_ = p.bar.Set64(int64(st.done()))
	case progressPlain:
		// A line when the state changes, else when rows got done, at most every plainEvery.
		now := time.Now()
		moved := st.done() != p.lastDone && (now.Sub(p.lastLine) >= plainEvery || st.ended())
		if st.State == p.lastState && !moved {
			return
		}
		p.lastLine, p.lastState, p.lastDone = now, st.State, st.done()
		fmt.Fprintln(p.w, p.line(st, now))
	}
}

// line is one line of plain progress.
func (p *progress) line(st jobStatus, now time.Time) string {
	elapsed := now.Sub(p.start)
	r := st.Rows
	s := fmt.Sprintf("  [%6.1fs] %-9s %3.0f%%  %d/%d rows done (matched %d, no_match %d, failed %d, skipped %d), in flight %d, retry %d",
		elapsed.Seconds(), st.State, 100*st.Progress, st.done(), r.Total, r.Matched, r.NoMatch, r.Failed, r.Skipped, r.InFlight, r.RetryWait)
	if secs := elapsed.Seconds(); secs >= 1 && st.done() > p.firstDone {
		s += fmt.Sprintf(", %.1f rows/s", float64(st.done()-p.firstDone)/secs)
	}
	if st.ETASeconds != nil && !st.ended() {
		s += fmt.Sprintf(", eta %s", time.Duration(*st.ETASeconds)*time.Second)
	}
	s += ", credits " + fmt.Sprint(st.Credits.Spent)
	if st.Credits.Budget != nil {
		s += fmt.Sprintf("/%d", *st.Credits.Budget)
	}
	return s
}

// note writes a message without breaking the bar.
func (p *progress) note(msg string) {
	switch p.mode {
	case progressBar:
		_ = p.bar.Clear()
		fmt.Fprintf(p.w, "\r%s\n", msg)
	case progressPlain:
		fmt.Fprintln(p.w, "  "+msg)
	}
}

// stop ends the display at st.
func (p *progress) stop(st jobStatus) {
	if p.mode != progressBar || p.bar.IsFinished() {
		return
	}
	p.bar.Describe(barDescription(st))
	_ = p.bar.Set64(int64(st.done()))
	if !p.bar.IsFinished() {
		_ = p.bar.Exit() // prints the newline
	}
}

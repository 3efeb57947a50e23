package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/enrichq/enrichq/internal/domain"
)

// funcs are the templates' helpers: plain words for states, numbers with
// their units.
func (u *UI) funcs() template.FuncMap {
	return template.FuncMap{
		"stateWords": stateWords,
		"rowWords":   rowWords,
		"stageWords": stageWords,
		"percent":    percent,
		"count": func(n any) string {
			switch v := n.(type) {
			case int:
				return count(v)
			case int64:
				return count(v)
			}
			return fmt.Sprint(n)
		},
		"credits":    credits,
		"budget":     budget,
		"duration":   duration,
		"eta":        eta,
		"when":       when,
		"ago":        func(t time.Time) string { return ago(t, u.cfg.Now()) },
		"deref":      func(s *string) string { return deref(s) },
		"final":      func(s domain.JobState) bool { return final(s) },
		"stages":     stageList,
		"perRow":     perRow,
		"join":       strings.Join,
		"orderWords": orderWords,
	}
}

// stateWords says a job's state as a person would.
func stateWords(s domain.JobState) string {
	switch s {
	case domain.JobQueued:
		return "Waiting to start"
	case domain.JobRunning:
		return "Running"
	case domain.JobPaused:
		return "Paused"
	case domain.JobCompleted:
		return "Done"
	case domain.JobCanceled:
		return "Canceled"
	case domain.JobFailed:
		return "Failed"
	}
	return string(s)
}

// rowWords says a result row's state as a person would.
func rowWords(s domain.RowState) string {
	switch s {
	case domain.RowPending:
		return "waiting"
	case domain.RowInFlight:
		return "being looked up"
	case domain.RowRetryWait:
		return "to retry"
	case domain.RowMatched:
		return "matched"
	case domain.RowNoMatch:
		return "no match"
	case domain.RowFailed:
		return "failed"
	case domain.RowSkipped:
		return "skipped"
	}
	return string(s)
}

// stageWords says what a lookup stage finds.
func stageWords(s domain.Stage) string {
	switch s {
	case domain.StageProfile:
		return "Profile (person, role, company)"
	case domain.StageEmail:
		return "Work email, with a confidence"
	case domain.StagePhone:
		return "Phone numbers"
	case domain.StageVerify:
		return "Verify each email found (an invalid one is not delivered)"
	}
	return string(s)
}

// pauseWords says why a job is paused and the way back; "" for a cause
// without words here (its state_reason says it).
func pauseWords(c domain.PauseCause, budgetCredits *int64) string {
	switch c {
	case domain.PausedByJobBudget:
		return "The job’s budget is spent (" + budget(budgetCredits) + "). Raise it to go on."
	case domain.PausedByAllowance:
		return "This month’s allowance is spent. The job goes on at the start of next month, when the allowance is raised, or when you resume it."
	case domain.PausedByVendorAccess:
		return "The vendor refused our key or plan. Resume once it is fixed."
	}
	return ""
}

// final: the job will not change any more.
func final(s domain.JobState) bool {
	return s == domain.JobCompleted || s == domain.JobCanceled || s == domain.JobFailed
}

func percent(f float64) string { return strconv.Itoa(int(math.Floor(f*100))) + " %" }

// count writes a whole number with thousands separators: 12,345.
func count[T int | int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func credits(n int64) string {
	if n == 1 {
		return "1 credit"
	}
	return count(n) + " credits"
}

// budget says a job's budget: "no budget" for none.
func budget(b *int64) string {
	if b == nil {
		return "no budget"
	}
	return credits(*b)
}

// duration says seconds as a person would: "under a second", "about 3 min".
func duration(secs float64) string {
	switch {
	case secs < 1:
		return "under a second"
	case secs < 60:
		return fmt.Sprintf("about %d s", int(math.Ceil(secs)))
	case secs < 3600:
		return fmt.Sprintf("about %d min", int(math.Ceil(secs/60)))
	default:
		h := int(secs / 3600)
		m := int(math.Ceil((secs - float64(h)*3600) / 60))
		if m == 0 {
			return fmt.Sprintf("about %d h", h)
		}
		return fmt.Sprintf("about %d h %d min", h, m)
	}
}

// eta says a job's time to go: unknown until rows have finished.
func eta(secs *int64, state domain.JobState) string {
	switch {
	case final(state):
		return "finished"
	case state == domain.JobPaused:
		return "paused"
	case secs == nil:
		return "not known yet"
	case *secs == 0:
		return "finishing"
	}
	return duration(float64(*secs))
}

// when is a time in UTC, to the minute.
func when(t any) string {
	switch v := t.(type) {
	case time.Time:
		return v.UTC().Format("2006-01-02 15:04 UTC")
	case *time.Time:
		if v == nil {
			return "—"
		}
		return v.UTC().Format("2006-01-02 15:04 UTC")
	}
	return ""
}

// ago says how long before now t was: "5 min ago".
func ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

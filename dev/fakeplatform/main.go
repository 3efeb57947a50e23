// Command fakeplatform serves the fake platform (package
// internal/platform/platformtest): its OAuth consent screen and token endpoint,
// and /rest/me, for demos and manual runs of the connect flow.
//
//	fakeplatform -addr 127.0.0.1:9191 -members 3 -member-quota 100 -retired 202401
//
// It prints one line "fakeplatform listening on http://ADDR" on stdout when
// it is ready, and stops on SIGINT or SIGTERM. Members m-1 ... m-N exist; the
// consent screen consents as the member signed in: POST
// /_fake/signin?member=m-2 (m-1 at start). GET /_fake/stats shows what it did.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/enrichq/enrichq/dev/internal/fakecmd"
	"github.com/enrichq/enrichq/internal/platform/platformtest"
)

func main() { fakecmd.Main("fakeplatform", run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts := platformtest.DefaultOptions()
	fs := flag.NewFlagSet("fakeplatform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9191", "listen address (port 0: any free port)")
	members := fs.Int("members", 3, "members m-1 ... m-N")
	retired := fs.String("retired", "", "retired Platform-Version values (answered 426), comma-separated")
	redirects := fs.String("redirect-urls", "", "registered redirect URLs, comma-separated (empty: any)")
	fs.StringVar(&opts.ClientID, "client-id", opts.ClientID, "the app's client id")
	fs.StringVar(&opts.ClientSecret, "client-secret", opts.ClientSecret, "the app's client secret")
	fs.DurationVar(&opts.AccessTokenTTL, "token-ttl", opts.AccessTokenTTL, "access token life")
	fs.DurationVar(&opts.RefreshTokenTTL, "refresh-ttl", 0, "refresh token life (0: no refresh tokens)")
	fs.IntVar(&opts.AppDailyQuota, "app-quota", 0, "app-level /rest/me calls per UTC day (0: no cap)")
	fs.IntVar(&opts.MemberDailyQuota, "member-quota", 0, "member-level /rest/me calls per UTC day (0: no cap)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	opts.RetiredVersions = fakecmd.List(*retired)
	opts.RedirectURLs = fakecmd.List(*redirects)
	fp := platformtest.New(opts)
	names := []string{"Ann Lee", "Bob Roe", "Cat Kim", "Dan Fox", "Eve Ng", "Fay Oh"}
	for i := 1; i <= *members; i++ {
		first, last, _ := strings.Cut(names[(i-1)%len(names)], " ")
		fp.AddMember(platformtest.Member{ID: fmt.Sprintf("m-%d", i), FirstName: first, LastName: last,
			Headline: "Account Executive", VanityName: fmt.Sprintf("%s-%s-%d", strings.ToLower(first), strings.ToLower(last), i),
			Email: fmt.Sprintf("%s.%s%d@example.com", strings.ToLower(first), strings.ToLower(last), i)})
	}
	if *members > 0 {
		fp.SignIn("m-1")
	}
	mux := http.NewServeMux()
	mux.Handle("/", fp)
	mux.HandleFunc("POST /_fake/signin", func(w http.ResponseWriter, r *http.Request) {
		fp.SignIn(r.URL.Query().Get("member"))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /_fake/stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "%s\n", mustJSON(fp.Stats()))
	})
	return fakecmd.Serve(ctx, "fakeplatform", *addr, mux, slog.New(slog.NewJSONHandler(stderr, nil)), stdout, "members", *members)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

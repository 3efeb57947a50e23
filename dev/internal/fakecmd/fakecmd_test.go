package fakecmd

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRates(t *testing.T) {
	got, err := Rates(" FR=0.8, com=0.1 ,")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"fr": 0.8, "com": 0.1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Rates = %v, want %v", got, want)
	}
	for _, bad := range []string{"fr", "=0.5", "fr=x", "fr=1.5", "fr=-0.1"} {
		if _, err := Rates(bad); err == nil || !strings.Contains(err.Error(), "want segment=rate") {
			t.Errorf("Rates(%q) = %v, want an error naming the syntax", bad, err)
		}
	}
}

func TestList(t *testing.T) {
	if got := List(" a, ,b,"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("List = %q", got)
	}
	if got := List(""); got != nil {
		t.Errorf("List(\"\") = %q, want none", got)
	}
}

// Serve says where it listens, answers there, and returns nil once its
// context ends.
func TestServeAnnouncesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fake") })
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, "fakex", "127.0.0.1:0", h, slog.New(slog.DiscardHandler), pw) }()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "fakex listening on ")
	if !ok {
		t.Fatalf("first line %q, want \"fakex listening on URL\"", line)
	}
	resp, err := http.Get(url + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "fake" {
		t.Errorf("answer %q, want the handler's", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after its context ended: %v, want nil", err)
		}
	case <-time.After(ShutdownTimeout + 5*time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

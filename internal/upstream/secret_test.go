package upstream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/upstream"
)

// An adapter's configuration, printed, logged or marshalled in any of the
// ways Go offers, shows that its key is set and never the key.
func TestSecretNeverPrinted(t *testing.T) {
	const key = "sk_live_4242"
	type config struct {
		BaseURL    string
		APIKey     upstream.Secret
		HTTPClient *http.Client
	}
	cfg := config{BaseURL: "https://vendor.example", APIKey: key}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("config", "cfg", cfg, "key", cfg.APIKey)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("config", "key", cfg.APIKey, "cfg", struct{ APIKey upstream.Secret }{key})
	marshalled, err := json.Marshal(struct{ APIKey upstream.Secret }{key})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{
		"%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "%#v": fmt.Sprintf("%#v", cfg),
		"%s": fmt.Sprintf("%s", cfg.APIKey), "%q": fmt.Sprintf("%q", cfg.APIKey),
		"slog text": text.String(), "slog json": js.String(), "json": string(marshalled),
	} {
		if strings.Contains(s, key) || !strings.Contains(s, "[REDACTED]") {
			t.Errorf("%s prints %s", name, s)
		}
	}
	if got := fmt.Sprint(upstream.Secret("")); got != "(none)" {
		t.Errorf("an empty secret prints %q, want (none)", got)
	}
}

func TestSecretHeader(t *testing.T) {
	for _, c := range []struct {
		in      upstream.Secret
		want    string
		wantErr string
	}{
		{in: "  sk_1 \n", want: "sk_1"},
		{in: "   ", wantErr: "vendorx: API key is required"},
		{in: "sk 1", wantErr: "vendorx: API key holds blanks or control characters"},
		{in: "sk\x001", wantErr: "vendorx: API key holds blanks or control characters"},
	} {
		got, err := c.in.Header("vendorx")
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("Header(%q) = %q, %v; want error %q", string(c.in), got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Header(%q) = %q, %v; want %q", string(c.in), got, err, c.want)
		}
	}
}

package config

import (
	"strings"
	"testing"
	"time"
)

func platformEnv() map[string]string {
	return map[string]string{
		"ENRICHQ_PLATFORM_URL":           "https://api.platform.example",
		"ENRICHQ_PLATFORM_VERSION":       "202611",
		"ENRICHQ_PLATFORM_AUTH_URL":      "https://www.platform.example/oauth/v2/authorization",
		"ENRICHQ_PLATFORM_TOKEN_URL":     "https://www.platform.example/oauth/v2/accessToken",
		"ENRICHQ_PLATFORM_CLIENT_ID":     "client",
		"ENRICHQ_PLATFORM_CLIENT_SECRET": "secret",
		"ENRICHQ_PLATFORM_REDIRECT_URL":  "https://enrichq.example/v1/platform/callback",
		"ENRICHQ_PLATFORM_TOKEN_KEY":     "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	}
}

func TestPlatformConfig(t *testing.T) {
	t.Parallel()
	c, err := SchedulerFromEnv(env(platformEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Platform; !p.Enabled() || p.Require() != nil || p.ExpiryWindow != 0 {
		t.Fatalf("platform config: enabled %v, require %v, window %s", p.Enabled(), p.Require(), p.ExpiryWindow)
	}
	if c, _ := SchedulerFromEnv(env(nil)); c.Platform.Enabled() || c.Platform.Require() == nil {
		t.Error("an empty environment enables the platform, or lacks nothing")
	}

	// Without the key no service starts, and each says what is missing.
	e := platformEnv()
	delete(e, "ENRICHQ_PLATFORM_TOKEN_KEY")
	delete(e, "ENRICHQ_PLATFORM_REDIRECT_URL")
	_, errS := SchedulerFromEnv(env(e))
	_, errA := APIFromEnv(env(e))
	_, errW := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDOR_URL": "http://v", "ENRICHQ_VENDOR_KEY": "k", "ENRICHQ_PLATFORM_CLIENT_ID": "client"}))
	for _, err := range []error{errS, errA} {
		if err == nil || !strings.Contains(err.Error(), "ENRICHQ_PLATFORM_TOKEN_KEY") || !strings.Contains(err.Error(), "ENRICHQ_PLATFORM_REDIRECT_URL") {
			t.Errorf("missing key: %v", err)
		}
	}
	if errW == nil || !strings.Contains(errW.Error(), "ENRICHQ_PLATFORM_URL") {
		t.Errorf("worker with only a client id: %v", errW)
	}

	for name, tc := range map[string]struct{ key, value, want string }{
		"version with a dash": {"ENRICHQ_PLATFORM_VERSION", "2026-11", "six digits YYYYMM"},
		"version month 13":    {"ENRICHQ_PLATFORM_VERSION", "202613", "month"},
		"short key":           {"ENRICHQ_PLATFORM_TOKEN_KEY", "c2hvcnQ=", "ENRICHQ_PLATFORM_TOKEN_KEY"},
		"window in weeks":     {"ENRICHQ_PLATFORM_EXPIRY_WINDOW", "1w", "ENRICHQ_PLATFORM_EXPIRY_WINDOW"},
		"window of zero days": {"ENRICHQ_PLATFORM_EXPIRY_WINDOW", "0d", "ENRICHQ_PLATFORM_EXPIRY_WINDOW"},
	} {
		e := platformEnv()
		e[tc.key] = tc.value
		_, err := SchedulerFromEnv(env(e))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "c2hvcnQ") {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
	e = platformEnv()
	e["ENRICHQ_PLATFORM_EXPIRY_WINDOW"] = "14d"
	if c, err := SchedulerFromEnv(env(e)); err != nil || c.Platform.ExpiryWindow != 14*24*time.Hour {
		t.Errorf("14d: %s %v", c.Platform.ExpiryWindow, err)
	}
	e["ENRICHQ_PLATFORM_EXPIRY_WINDOW"] = "36h"
	if c, err := SchedulerFromEnv(env(e)); err != nil || c.Platform.ExpiryWindow != 36*time.Hour {
		t.Errorf("36h: %s %v", c.Platform.ExpiryWindow, err)
	}
}

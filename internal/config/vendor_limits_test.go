package config

import (
	"strings"
	"testing"
)

// A vendor's URL is https: over http anyone in the middle reads the key and
// writes the charge headers. Only a loopback address (a fake on this
// machine) is spoken to over http.
func TestVendorURLMustBeHTTPS(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"http://api.acme.example", "http://10.0.0.7:8080", "http://fakevendor:9090"} {
		f := writeFile(t, "vendors:\n  - name: acme\n    kind: seed\n    url: "+url+"\n    key_env: K\n    rate: 1\n")
		_, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": f, "K": "k"}))
		want := "vendors file " + f + ": vendors[0] (acme): url (line 4): \"" + url + "\": want https"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", url, err, want)
		}
	}
	for _, url := range []string{"https://api.acme.example", "http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9", "http://127.1.2.3"} {
		f := writeFile(t, "vendors:\n  - name: acme\n    kind: seed\n    url: '"+url+"'\n    key_env: K\n    rate: 1\n")
		if _, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": f, "K": "k"})); err != nil {
			t.Errorf("%s refused: %v", url, err)
		}
	}
}

// A credit_value that the vendor's largest charge or its monthly cap could
// overflow is refused at start, naming the entry and the field.
func TestVendorUnitsThatCouldOverflowAreRefused(t *testing.T) {
	t.Parallel()
	f := writeFile(t, "vendors:\n  - name: acme\n    kind: seed\n    url: https://api.acme.example\n    key_env: K\n    rate: 1\n"+
		"    credit_value: 1000000\n    monthly_credits: 1125899906842624\n")
	_, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": f, "K": "k"}))
	want := "vendors[0] (acme): monthly_credits (line 8): 1125899906842624: times credit_value 1000000 it is more than 1125899906842624 budget units (it could overflow)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v; want it to say %q", err, want)
	}
	ok := writeFile(t, "vendors:\n  - name: acme\n    kind: seed\n    url: https://api.acme.example\n    key_env: K\n    rate: 1\n"+
		"    credit_value: 1000000\n    monthly_credits: 1000000000\n")
	if _, err := WorkerFromEnv(env(map[string]string{"ENRICHQ_VENDORS_FILE": ok, "K": "k"})); err != nil {
		t.Fatalf("a cap that fits refused: %v", err)
	}
	// The largest call by the contract: 100 bulk rows of profile 2, email 10
	// and phone 25 at the seed (or the configured prices, when more); a
	// batch of matches at 1 credit each at pdl.
	for _, tc := range []struct {
		spec VendorSpec
		want int64
	}{
		{VendorSpec{Kind: VendorSeed}, 3700},
		{VendorSpec{Kind: VendorSeed, Prices: map[string]int64{"phone_mobile": 40}}, 5200},
		{VendorSpec{Kind: VendorPDL, BatchSize: 80}, 80},
		{VendorSpec{Kind: VendorPDL, BatchSize: 80, Prices: map[string]int64{"match": 3}}, 240},
	} {
		if got := maxCallCharge(tc.spec); got != tc.want {
			t.Errorf("%+v: largest call %d, want %d", tc.spec.Prices, got, tc.want)
		}
	}
}

package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/enrichq/enrichq/internal/apitest"
	"github.com/enrichq/enrichq/internal/config"
	"github.com/enrichq/enrichq/internal/service"
)

// enrichq vendors against a running API: the month's spend per vendor in
// the table is what the job's costs say, the warning of another tenant is
// not shown, and --json is the API's body.
func TestVendorsCommand(t *testing.T) {
	t.Parallel()
	const otherKey = "cli-test-key-beta-0002"
	api := apitest.Start(t, apitest.Options{Static: map[string]string{apiKey: "acme", otherKey: "beta"}, Scheduler: true,
		Service: func(c *service.Config) {
			c.Vendors = config.Vendors{List: []config.VendorSpec{
				{Name: "vendor", Kind: config.VendorSeed, URL: "https://seed.example", Rate: 10, CreditValue: 1},
				{Name: "pdl", Kind: config.VendorPDL, URL: "https://pdl.example", Rate: 5, CreditValue: 2},
			}}
		}})
	file := writeFile(t, "companies.csv", apitest.CompaniesCSV(8))
	r := cli(t, api.URL, "submit", file, "--roles", "CTO", "--wait", "--interval", "50ms")
	if r.err != nil {
		t.Fatalf("submit: %v", r)
	}
	id := strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0])
	_, body := api.Call(t, "GET", "/v1/jobs/"+id+"/costs", apiKey, "", nil)
	var costs struct {
		ByVendor map[string]struct {
			Calls   int   `json:"calls"`
			Credits int64 `json:"credits"`
		} `json:"by_vendor"`
	}
	if err := json.Unmarshal(body, &costs); err != nil || costs.ByVendor["vendor"].Credits == 0 {
		t.Fatalf("costs: %s (%v)", body, err)
	}
	paid := costs.ByVendor["vendor"]

	r = cli(t, api.URL, "vendors")
	if r.err != nil {
		t.Fatalf("vendors: %v", r)
	}
	row := regexp.MustCompile(`(?m)^vendor\s+seed\s+(\d+)\s+(\d+)\s+(\d+)\s+0\s+1 credit\s+in the waterfall$`).FindStringSubmatch(r.stdout)
	if row == nil || row[1] != itoa(paid.Credits) || row[2] != itoa(paid.Credits) || row[3] != itoa(int64(paid.Calls)) {
		t.Fatalf("vendors: the row of vendor is %q; the job paid %d credits in %d calls\n%s", row, paid.Credits, paid.Calls, r.stdout)
	}
	if !regexp.MustCompile(`(?m)^pdl\s+pdl\s+0\s+0\s+0\s+0\s+2 credits`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "EXPECTED CHARGE PER ROW") || !strings.Contains(r.stdout, "order: auto") {
		t.Fatalf("vendors:\n%s", r.stdout)
	}
	t.Logf("enrichq vendors:\n%s", r.stdout)

	r = cli(t, api.URL, "vendors", "--json")
	var v struct {
		Month   string `json:"month"`
		Vendors []struct {
			Name  string `json:"name"`
			Month struct {
				Spent int64 `json:"spent"`
			} `json:"month"`
		} `json:"vendors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); r.err != nil || err != nil || len(v.Vendors) != 2 || v.Vendors[0].Month.Spent != paid.Credits {
		t.Fatalf("vendors --json: %v (%v)", r, err)
	}

	// Tenant beta: nothing spent anywhere.
	r = cli(t, api.URL, "--key", otherKey, "vendors")
	if r.err != nil || !regexp.MustCompile(`(?m)^vendor\s+seed\s+0\s+0\s+0\s+0\s`).MatchString(r.stdout) {
		t.Fatalf("beta's vendors show acme's month: %v", r)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

package enrich

import (
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
)

func TestCostTable(t *testing.T) {
	t.Parallel()
	c := DefaultCosts()
	for s, want := range map[domain.Stage][2]int64{domain.StageProfile: {1, 2}, domain.StageEmail: {0, 10}, domain.StagePhone: {0, 25}} {
		if c.Best(s) != want[0] || c.Worst(s) != want[1] {
			t.Errorf("%s: best %d worst %d, want %v", s, c.Best(s), c.Worst(s), want)
		}
	}
	if got := c.PhoneCost(&Phones{Numbers: []Phone{{Number: "+1", Type: "office"}, {Number: "+2", Type: "Mobile"}}}); got != 25 {
		t.Errorf("a mobile costs %d", got)
	}
	if got := c.EmailCost(&Email{Address: "a@b", Verified: false}); got != 5 {
		t.Errorf("an unverified email costs %d", got)
	}
	rows := []ProfileQuery{{ProfileURL: "u"}, {Name: "n", Company: "c"}}
	if got := c.BulkWorst(rows, []domain.Stage{domain.StageEmail, domain.StagePhone}); got != (1+10+25)+(2+10+25) {
		t.Errorf("bulk worst = %d", got)
	}
}

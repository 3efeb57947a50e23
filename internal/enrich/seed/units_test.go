package seed

import (
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
	"github.com/enrichq/enrichq/internal/enrich"
)

// The seed's most per answer is its contract's (profile 2, email 10, phone
// 25; a bulk row the sum of its stages), or its configured table's when
// that is more.
func TestSeedMaxCharge(t *testing.T) {
	t.Parallel()
	s := NewOver("seed", nil, enrich.DefaultCosts(), "")
	q := enrich.Question{Query: enrich.ProfileQuery{Name: "CTO", Company: "Acme"}}
	for _, tc := range []struct {
		stages []domain.Stage
		want   int64
	}{
		{[]domain.Stage{domain.StageProfile}, 2},
		{[]domain.Stage{domain.StageEmail}, 10},
		{[]domain.Stage{domain.StagePhone}, 25},
		{[]domain.Stage{domain.StageProfile, domain.StageEmail, domain.StagePhone}, 37},
	} {
		q.Stages = tc.stages
		if got := s.MaxCharge(q); got != tc.want {
			t.Errorf("%v: most %d, want %d", tc.stages, got, tc.want)
		}
	}
	dear := enrich.DefaultCosts()
	dear.PhoneMobile = 40
	q.Stages = []domain.Stage{domain.StagePhone}
	if got := NewOver("seed", nil, dear, "").MaxCharge(q); got != 40 {
		t.Errorf("a configured mobile price of 40: most %d, want 40", got)
	}
}

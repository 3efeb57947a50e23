package enrich

import (
	"slices"
	"testing"

	"github.com/enrichq/enrichq/internal/domain"
)

// The waterfall model the worker, the order and the estimate share: a
// one-stage vendor is asked a later stage by the profile URL found; the
// listed order puts the named first, the others after them when rest.
func TestWaterfallModel(t *testing.T) {
	oneStage := Caps{Stages: domain.Stages, Inputs: map[domain.Stage][]domain.InputKind{
		domain.StageProfile: {domain.InputNameCompany, domain.InputProfileURL},
		domain.StageEmail:   {domain.InputProfileURL},
	}}
	if by, ok := oneStage.AskedBy(domain.StageEmail, domain.InputNameCompany, false); !ok || by != domain.InputProfileURL {
		t.Errorf("email of a name at a one-stage vendor asked by %q, %v; want by the profile URL", by, ok)
	}
	if by, ok := oneStage.AskedBy(domain.StageProfile, domain.InputNameCompany, false); !ok || by != domain.InputNameCompany {
		t.Errorf("profile asked by %q, %v", by, ok)
	}
	if _, ok := oneStage.AskedBy(domain.StagePhone, domain.InputNameCompany, false); ok {
		t.Error("a stage the vendor does not answer is asked")
	}
	if _, ok := oneStage.AskedBy(domain.StageProfile, domain.InputNameCompany, true); ok {
		t.Error("a role title asked of a vendor without role search")
	}
	if got := Ordered([]string{"b", "x", "a"}, []string{"a", "b", "c"}, true); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("listed order with the rest: %v", got)
	}
	if got := Ordered([]string{"b"}, []string{"a", "b", "c"}, false); !slices.Equal(got, []string{"b"}) {
		t.Errorf("listed order alone: %v", got)
	}
	per := func(q Question) Price { return Price{Miss: 1, Hit: 2, Worst: 3} }
	if p := RowPrice(oneStage, per, Question{Stages: []domain.Stage{domain.StageEmail, domain.StagePhone}}); p != (Price{2, 4, 6}) {
		t.Errorf("two later stages at a one-stage vendor: %+v, want one ask each", p)
	}
	if p := RowPrice(oneStage, per, Question{Stages: []domain.Stage{domain.StageProfile, domain.StageEmail}}); p != (Price{1, 2, 3}) {
		t.Errorf("with the profile: %+v, want one ask", p)
	}
}

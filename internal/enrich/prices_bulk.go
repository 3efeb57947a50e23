package enrich

import (
	"math/big"
	"slices"
	"strings"

	"github.com/enrichq/enrichq/internal/domain"
)

// BulkClasses counts the classes of a bulk call's answered rows (for
// learning from the call's total): ok is false when a row's outcome is
// unknown (its price cannot be told). Rows with a permanent error cost
// nothing and are not counted.
func BulkClasses(rows []ProfileQuery, include []domain.Stage, items []BulkItem) (counts map[PriceClass]int64, ok bool) {
	counts = map[PriceClass]int64{}
	for i, it := range items {
		if i >= len(rows) {
			return nil, false
		}
		if it.Err != nil {
			if it.Err.OutcomeUnknown {
				return nil, false
			}
			continue
		}
		for _, c := range rowClasses(rows[i], include, it) {
			counts[c]++
		}
	}
	return counts, true
}

// rowClasses are the classes one answered bulk row is billed for: its
// profile lookup, and for a match each later stage asked.
func rowClasses(q ProfileQuery, include []domain.Stage, it BulkItem) []PriceClass {
	out := []PriceClass{ProfileClass(q.Kind(), it.Profile != nil)}
	if it.Profile == nil {
		return out
	}
	for _, s := range include {
		switch s {
		case domain.StageEmail:
			out = append(out, EmailClass(it.Email))
		case domain.StagePhone:
			out = append(out, PhoneClass(it.Phones))
		}
	}
	return out
}

// SolveBulk finds what a bulk call's total tells of the prices not learned
// yet. When every class of the call but one has a learned price, the total
// less what those cost, shared by the rows of the one left, is its price (a
// call whose rows all fall in one class is the simplest case). A call with
// more unknown classes is kept as an equation (the latest 64), and the
// equations kept are solved together for the classes they determine:
// exactly, in integers not below 0, and consistent with every one of them;
// else nothing is learned (and, when they contradict each other, a price
// changed meanwhile: they are dropped).
func (b *PriceBook) SolveBulk(counts map[PriceClass]int64, total int64) map[PriceClass]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := bulkEquation{counts: map[PriceClass]int64{}, total: total}
	open := false
	for c, n := range counts {
		if n > 0 {
			e.counts[c] = n
			_, known := b.known[c]
			open = open || !known
		}
	}
	if !open {
		return nil // every class priced: nothing to solve
	}
	b.equations = append(b.equations, e)
	if len(b.equations) > maxEquations {
		b.equations = b.equations[len(b.equations)-maxEquations:]
	}
	solved, consistent := solveEquations(b.equations, b.known)
	if !consistent {
		b.equations = nil
		return nil
	}
	return solved
}

// maxEquations bounds the bulk calls a book keeps to solve together.
const maxEquations = 64

// bulkEquation is a bulk call's total and the classes of its rows.
type bulkEquation struct {
	counts map[PriceClass]int64
	total  int64
}

// solveEquations solves eqs for the classes known does not price, by
// Gaussian elimination over the rationals. consistent is false when the
// equations contradict each other or the known prices.
func solveEquations(eqs []bulkEquation, known map[PriceClass]LearnedPrice) (solved map[PriceClass]int64, consistent bool) {
	var unknown []PriceClass
	index := map[PriceClass]int{}
	for _, e := range eqs {
		for c := range e.counts {
			if _, ok := known[c]; ok {
				continue
			}
			if _, ok := index[c]; !ok {
				index[c] = len(unknown)
				unknown = append(unknown, c)
			}
		}
	}
	if len(unknown) == 0 {
		for _, e := range eqs {
			if rest(e, known) != 0 {
				return nil, false
			}
		}
		return nil, true
	}
	slices.SortFunc(unknown, func(a, b PriceClass) int { return strings.Compare(a.String(), b.String()) })
	for i, c := range unknown {
		index[c] = i
	}
	n := len(unknown)
	rows := make([][]*big.Rat, 0, len(eqs))
	for _, e := range eqs {
		r := make([]*big.Rat, n+1)
		for i := range r {
			r[i] = new(big.Rat)
		}
		for c, k := range e.counts {
			if i, ok := index[c]; ok {
				r[i].SetInt64(k)
			}
		}
		r[n].SetInt64(rest(e, known))
		rows = append(rows, r)
	}
	// Row reduction.
	rank := 0
	pivots := make([]int, 0, n)
	for col := 0; col < n && rank < len(rows); col++ {
		p := -1
		for i := rank; i < len(rows); i++ {
			if rows[i][col].Sign() != 0 {
				p = i
				break
			}
		}
		if p < 0 {
			continue
		}
		rows[rank], rows[p] = rows[p], rows[rank]
		inv := new(big.Rat).Inv(rows[rank][col])
		for j := col; j <= n; j++ {
			rows[rank][j].Mul(rows[rank][j], inv)
		}
		for i := range rows {
			if i == rank || rows[i][col].Sign() == 0 {
				continue
			}
			f := new(big.Rat).Set(rows[i][col])
			for j := col; j <= n; j++ {
				rows[i][j].Sub(rows[i][j], new(big.Rat).Mul(f, rows[rank][j]))
			}
		}
		pivots = append(pivots, col)
		rank++
	}
	for i := rank; i < len(rows); i++ {
		if rows[i][n].Sign() != 0 {
			return nil, false // 0 = non-zero: the equations disagree
		}
	}
	// A class is determined when its row, reduced, names no class left
	// free. (A matched row of a call with email is billed its profile and
	// its email together: those two are told apart only once one of them is
	// priced elsewhere.)
	isPivot := make([]bool, n)
	for _, col := range pivots {
		isPivot[col] = true
	}
	solved = map[PriceClass]int64{}
	for i, col := range pivots {
		free := false
		for j := 0; j < n; j++ {
			if !isPivot[j] && rows[i][j].Sign() != 0 {
				free = true
				break
			}
		}
		if free {
			continue
		}
		v := rows[i][n]
		if !v.IsInt() || v.Sign() < 0 || !v.Num().IsInt64() {
			return nil, false // no vendor charges that
		}
		solved[unknown[col]] = v.Num().Int64()
	}
	return solved, true
}

// rest is an equation's total less what its known classes cost.
func rest(e bulkEquation, known map[PriceClass]LearnedPrice) int64 {
	r := e.total
	for c, k := range e.counts {
		if p, ok := known[c]; ok {
			r -= k * p.Credits
		}
	}
	return r
}

// BulkPrice is what a bulk call's answered rows cost by the book: the sum
// of their prices (a row of unknown outcome at its worst case, a row with a
// permanent error at 0).
func (b *PriceBook) BulkPrice(rows []ProfileQuery, include []domain.Stage, items []BulkItem) int64 {
	var c int64
	for i, it := range items {
		if i < len(rows) {
			c += BulkRowPrice(b, b.table, rows[i], include, it)
		}
	}
	return c
}

package vendororder

import "github.com/enrichq/enrichq/internal/domain"

// waterfallCost is the expected charge per row, in budget units, of the
// waterfall asking plans in order for the stages of need, for a row of
// input kind.
//
// It follows the row as the waterfall does: stage after stage (profile,
// email, phone), each asking the vendors in order until one answers. The
// row's state is the set of stages still open, and which FillsAll vendors
// were asked already (one call asks such a vendor every open stage it
// answers; it is never asked again for the row). A one-stage vendor
// answers stage s with its rate p_s, for its expected charge e_s; a vendor
// that answers s only from a profile URL (a one-stage vendor's email and phone) is
// asked only once the profile is found (or was not needed). A FillsAll
// vendor finds a record with its match rate m, billed by its price list,
// and the record fills each stage t asked with p_t ÷ m, independently.
// The charge is the sum over states and vendors of the probability of the
// state times the charge of the ask.
func waterfallCost(plans []*plan, need uint8, kind domain.InputKind) float64 {
	fill := make([]int, len(plans)) // the FillsAll vendors' bits in a state, above the stage bits
	nf := 0
	for i, p := range plans {
		if p.fillsAll {
			fill[i] = 3 + nf
			nf++
		}
	}
	states := make([]float64, 8<<nf)
	next := make([]float64, len(states))
	states[need] = 1
	total := 0.0
	for si := range 3 {
		b := 1 << si
		if int(need)&b == 0 {
			continue
		}
		for i, p := range plans {
			clear(next)
			for s, pr := range states {
				if pr == 0 {
					continue
				}
				mask := uint8(s & 7)
				urlKnown := kind == domain.InputProfileURL || mask&profileBit == 0
				asked := p.fillsAll && s&(1<<fill[i]) != 0
				if int(mask)&b == 0 || p.answers(urlKnown)&uint8(b) == 0 || asked {
					next[s] += pr
					continue
				}
				if !p.fillsAll {
					total += pr * p.e[si]
					next[s&^b] += pr * p.p[si]
					next[s] += pr * (1 - p.p[si])
					continue
				}
				ask := mask & p.answers(urlKnown)
				s2 := s | 1<<fill[i]
				total += pr * p.callE[ask]
				next[s2] += pr * (1 - p.match)
				if p.match <= 0 {
					continue
				}
				for sub := ask; ; sub = (sub - 1) & ask { // the stages the record fills
					q := 1.0
					for t := range 3 {
						tb := uint8(1) << t
						if ask&tb == 0 {
							continue
						}
						if f := min(1, p.p[t]/p.match); sub&tb != 0 {
							q *= f
						} else {
							q *= 1 - f
						}
					}
					next[s2&^int(sub)] += pr * p.match * q
					if sub == 0 {
						break
					}
				}
			}
			states, next = next, states
		}
	}
	return total
}

package findings

// prefilter finds, in one pass over a sentence, which patterns have a literal in it: an
// Aho–Corasick automaton over every pattern's literals, whose states carry the mask of
// the patterns whose literals end there.
var prefilter automaton

func init() {
	for i, lits := range patterns {
		for _, l := range lits {
			prefilter.add(l, 1<<i)
		}
	}
	prefilter.build()
}

type automaton struct {
	nodes []acNode
}

type acNode struct {
	next map[byte]int32
	fail int32
	mask uint64
}

func (a *automaton) add(lit string, bit uint64) {
	if len(a.nodes) == 0 {
		a.nodes = append(a.nodes, acNode{next: map[byte]int32{}})
	}
	n := int32(0)
	for i := 0; i < len(lit); i++ {
		nx, ok := a.nodes[n].next[lit[i]]
		if !ok {
			nx = int32(len(a.nodes))
			a.nodes = append(a.nodes, acNode{next: map[byte]int32{}})
			a.nodes[n].next[lit[i]] = nx
		}
		n = nx
	}
	a.nodes[n].mask |= bit
}

// build computes the failure links breadth first, and folds into each state's mask the
// masks of the states its failure chain reaches (the literals that end there too).
func (a *automaton) build() {
	if len(a.nodes) == 0 {
		a.nodes = append(a.nodes, acNode{next: map[byte]int32{}})
	}
	queue := make([]int32, 0, len(a.nodes))
	for _, c := range sortedKeys(a.nodes[0].next) {
		nx := a.nodes[0].next[c]
		a.nodes[nx].fail = 0
		queue = append(queue, nx)
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, c := range sortedKeys(a.nodes[n].next) {
			nx := a.nodes[n].next[c]
			f := a.nodes[n].fail
			for {
				if t, ok := a.nodes[f].next[c]; ok && t != nx {
					a.nodes[nx].fail = t
					break
				}
				if f == 0 {
					a.nodes[nx].fail = 0
					break
				}
				f = a.nodes[f].fail
			}
			a.nodes[nx].mask |= a.nodes[a.nodes[nx].fail].mask
			queue = append(queue, nx)
		}
	}
}

func sortedKeys(m map[byte]int32) []byte {
	var out []byte
	for c := 0; c < 256; c++ {
		if _, ok := m[byte(c)]; ok {
			out = append(out, byte(c))
		}
	}
	return out
}

// scan returns the mask of the patterns that have a literal in s.
func (a *automaton) scan(s string) uint64 {
	var mask uint64
	n := int32(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		for {
			if nx, ok := a.nodes[n].next[c]; ok {
				n = nx
				break
			}
			if n == 0 {
				break
			}
			n = a.nodes[n].fail
		}
		mask |= a.nodes[n].mask
	}
	return mask
}

package checkpoint_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
)

type policyKeys struct {
	log       string
	witnesses []*checkpoint.Cosigner
}

func newPolicyKeys(t *testing.T, n int) (policyKeys, edSigner) {
	t.Helper()
	ls := newEd(t)
	lk, _ := checkpoint.VerifierKey("example.com/log", ls.Public())
	k := policyKeys{log: lk}
	for i := range n {
		c, err := checkpoint.NewCosigner("witness.example/w"+string(rune('1'+i)), newEd(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		k.witnesses = append(k.witnesses, c)
	}
	return k, ls
}

// cosignedNote is the log's checkpoint of size 3 cosigned by the witnesses given.
func cosignedNote(t *testing.T, ls edSigner, by ...*checkpoint.Cosigner) []byte {
	t.Helper()
	b, err := checkpoint.SignNote(t.Context(), ls, "example.com/log", 3, tlog.RecordHash([]byte("r")))
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(string(b), "\n\n")
	for _, c := range by {
		s, err := note.Sign(&note.Note{Text: text + "\n"}, c)
		if err != nil {
			t.Fatal(err)
		}
		_, sig, _ := strings.Cut(string(s), "\n\n")
		b = checkpoint.WithCosignatures(b, []byte(sig))
	}
	return b
}

// TestPolicyQuorum: k of n, as tlog-policy groups say: 2 of 2 fails with one cosignature
// and passes with both, 1 of 2 passes with either, none needs nothing; the spec's two-level
// example; a cosignature by a key the policy does not list counts for nothing.
func TestPolicyQuorum(t *testing.T) {
	k, ls := newPolicyKeys(t, 3)
	w1, w2, w3 := k.witnesses[0], k.witnesses[1], k.witnesses[2]
	head := "# two teams\nlog " + k.log + " https://example.com/log/\n\twitness A " + w1.VerifierKey() + "  \nwitness B " + w2.VerifierKey() + " https://witness.example/b\n"
	tests := []struct {
		name   string
		policy string
		by     []*checkpoint.Cosigner
		ok     bool
	}{
		{"2 of 2, one cosigned", head + "group both all A B\nquorum both\n", []*checkpoint.Cosigner{w1}, false},
		{"2 of 2, both cosigned", head + "group both 2 A B\nquorum both\n", []*checkpoint.Cosigner{w2, w1}, true},
		{"1 of 2, one cosigned", head + "group either 1 A B\nquorum either\n", []*checkpoint.Cosigner{w2}, true},
		{"any of 2, none cosigned", head + "group either any A B\nquorum either\n", nil, false},
		{"an unlisted witness", head + "group either any A B\nquorum either\n", []*checkpoint.Cosigner{w3}, false},
		{"one witness", head + "quorum B\n", []*checkpoint.Cosigner{w2}, true},
		{"none", head + "quorum none", nil, true},
		{"nested", head + "witness C " + w3.VerifierKey() + "\ngroup AB all A B\ngroup ABorC any AB C\nquorum ABorC\n", []*checkpoint.Cosigner{w3}, true},
		{"nested, short", head + "witness C " + w3.VerifierKey() + "\ngroup AB all A B\ngroup ABandC all AB C\nquorum ABandC\n", []*checkpoint.Cosigner{w1, w3}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := checkpoint.ParsePolicy([]byte(tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := p.Log("example.com/log"); !ok || l.VKey != k.log || l.URL != "https://example.com/log/" {
				t.Fatalf("log %+v %v", l, ok)
			}
			n, err := checkpoint.OpenNote(cosignedNote(t, ls, tc.by...), k.log, p.WitnessVerifiers())
			if err != nil {
				t.Fatal(err)
			}
			err = p.Check(n)
			if (err == nil) != tc.ok {
				t.Fatalf("Check: %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "short of its quorum") {
				t.Errorf("message %q", err)
			}
		})
	}
	p, _ := checkpoint.ParsePolicy([]byte(head + "group both all A B\nquorum both\n"))
	n, _ := checkpoint.OpenNote(cosignedNote(t, ls, w1), k.log, p.WitnessVerifiers())
	if err := p.Check(n); err == nil || err.Error() != "cosigned by 1 of the policy's 2 witnesses (A), short of its quorum both (2 of A, B)" {
		t.Errorf("message %v", err)
	}
}

// TestPolicyRefused: every malformed policy is refused naming its line and what is wrong.
func TestPolicyRefused(t *testing.T) {
	k, _ := newPolicyKeys(t, 2)
	w1, w2 := k.witnesses[0].VerifierKey(), k.witnesses[1].VerifierKey()
	// The same key under another name is still the same witness.
	s := newEd(t)
	same, _ := checkpoint.NewCosigner("witness.example/one", s, nil)
	again, _ := checkpoint.NewCosigner("witness.example/two", s, nil)
	mldsa := "witness.example/pq+00000000+" + "Bg" + strings.Repeat("A", 42)
	tests := []struct{ policy, want string }{
		{"log " + k.log + "\nquorum none\nwhatever x\n", "line 3: unknown line \"whatever\""},
		{"log example.com/log+1234+AAAA\nquorum none\n", "line 1: log key"},
		{"log " + k.log + "\nlog " + k.log + "\nquorum none\n", "line 2: the same log key as line 1"},
		{"witness A " + w1 + "\nwitness A " + w2 + "\nquorum A\n", "line 2: the name \"A\" is already defined"},
		{"witness A " + same.VerifierKey() + "\nwitness B " + again.VerifierKey() + "\nquorum A\n", "line 2: witness B has the same key as line 1"},
		{"witness A not-a-key\nquorum A\n", "line 1: witness A"},
		{"witness A " + mldsa + "\nquorum A\n", "ML-DSA-44"},
		{"witness A " + w1 + "\ngroup g 2 A\nquorum g\n", "threshold \"2\" must be all, any or a number from 1 to 1"},
		{"witness A " + w1 + "\ngroup g 0 A\nquorum g\n", "threshold \"0\""},
		{"witness A " + w1 + "\ngroup g +1 A\nquorum g\n", "threshold \"+1\""},
		{"witness A " + w1 + "\ngroup g any A B\nquorum g\n", "\"B\" is not a witness or group defined above"},
		{"witness A " + w1 + "\ngroup g any A A\nquorum g\n", "lists \"A\" twice"},
		{"witness A " + w1 + "\ngroup g any none\nquorum g\n", "\"none\" cannot be a member"},
		{"witness none " + w1 + "\nquorum none\n", "the name \"none\" is already defined"},
		{"quorum B\nwitness B " + w2 + "\n", "line 1: quorum \"B\" is not a witness or group defined above"},
		{"witness A " + w1 + "\n", "no quorum line"},
		{"quorum none\nquorum none\n", "line 2: a second quorum line"},
		{"quorum none\r\n", "line 1: control character 0x0d"},
		{"witness A\nquorum none\n", "line 1: want witness <name> <vkey> [<url>]"},
		{"log " + k.log + " u extra\nquorum none\n", "line 1: want log <vkey> [<url>]"},
		{strings.Repeat("#", checkpoint.MaxPolicyBytes+1), "larger than"},
	}
	for _, tc := range tests {
		_, err := checkpoint.ParsePolicy([]byte(tc.policy))
		if !errors.Is(err, checkpoint.ErrPolicy) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePolicy(%.60q): %v\nwant an ErrPolicy containing %q", tc.policy, err, tc.want)
		}
	}
}

// FuzzParsePolicy: no panics; a policy that parses has a quorum that is defined, and
// Satisfied never panics on it.
func FuzzParsePolicy(f *testing.F) {
	f.Add("quorum none\n")
	f.Add("witness A w.example/a+00000000+BAAA\ngroup g any A\nquorum g\n")
	f.Add("log example.com/log+1234abcd+AQ==\n\tgroup  g 2 A B\n# c\nquorum g")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := checkpoint.ParsePolicy([]byte(s))
		if err != nil {
			if !errors.Is(err, checkpoint.ErrPolicy) {
				t.Fatalf("an error that is not ErrPolicy: %v", err)
			}
			return
		}
		_ = p.Satisfied(nil)
		_ = p.Describe(p.Quorum)
	})
}

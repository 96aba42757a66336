package trust

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/sshsig"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// newSigner makes an ed25519 SSH key in memory, through the OpenSSH private key format.
func newSigner(t *testing.T) sshsig.Signer {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	str := func(b []byte) []byte {
		return append([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))}, b...)
	}
	pubBlob := append(str([]byte("ssh-ed25519")), str(pub)...)
	inner := append([]byte{1, 2, 3, 4, 1, 2, 3, 4}, pubBlob...)
	inner = append(inner, str(priv)...)
	inner = append(inner, str([]byte("c"))...)
	for pad := byte(1); len(inner)%8 != 0; pad++ { // 1, 2, 3, … as PROTOCOL.key says and ssh-keygen checks
		inner = append(inner, pad)
	}
	b := []byte("openssh-key-v1\x00")
	b = append(b, str([]byte("none"))...)
	b = append(b, str([]byte("none"))...)
	b = append(b, str(nil)...)
	b = append(b, 0, 0, 0, 1)
	b = append(b, str(pubBlob)...)
	b = append(b, str(inner)...)
	s, err := sshsig.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: b}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func key(t *testing.T, name string, s sshsig.Signer) Key {
	k, err := NewKey(name, s.Public().AuthorizedKey())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestApply(t *testing.T) {
	alice, bob, eve := newSigner(t), newSigner(t), newSigner(t)
	init := List{Keys: []Key{key(t, "alice", alice)}}
	l, err := Apply(nil, Change{Action: "init", List: init}, warrant.Genesis())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(&l, Change{Action: "init", List: init}, warrant.Genesis()); err == nil {
		t.Error("second init accepted")
	}
	head := warrant.AuditHead{Seq: 1, Hash: strings.Repeat("a", 64)}
	change := func(action string, signer sshsig.Signer, signerName string, subject Key, after List, h warrant.AuditHead) Change {
		st := Statement{Type: TypeTrust, Action: action, Subject: &subject, Signer: signerName, AuditHead: h, At: time.Now().UTC().Format(time.RFC3339)}
		b, sig, err := Sign(st, signer)
		if err != nil {
			t.Fatal(err)
		}
		return Change{Action: action, List: after, Statement: b, Signature: string(sig)}
	}
	withBob := List{Keys: []Key{key(t, "alice", alice), key(t, "bob", bob)}}
	if _, err := Apply(&l, change("add", eve, "eve", key(t, "bob", bob), withBob, head), head); err == nil || !strings.Contains(err.Error(), "not on the trust list") {
		t.Errorf("add signed by an untrusted key: %v", err)
	}
	if _, err := Apply(&l, change("add", alice, "alice", key(t, "bob", bob), withBob, warrant.Genesis()), head); err == nil || !strings.Contains(err.Error(), "audit head") {
		t.Errorf("add signed over another head: %v", err)
	}
	if _, err := Apply(&l, change("add", alice, "alice", key(t, "bob", bob), init, head), head); err == nil {
		t.Error("a recorded list that is not the change applied was accepted")
	}
	if _, err := Apply(&l, change("add", alice, "bob", key(t, "bob", bob), withBob, head), head); err == nil || !strings.Contains(err.Error(), "names signer") {
		t.Errorf("a statement naming another signer: %v", err)
	}
	l2, err := Apply(&l, change("add", alice, "alice", key(t, "bob", bob), withBob, head), head)
	if err != nil || len(l2.Keys) != 2 {
		t.Fatalf("add: %v", err)
	}
	l3, err := Apply(&l2, change("remove", bob, "bob", key(t, "alice", alice), List{Keys: []Key{key(t, "bob", bob)}}, head), head)
	if err != nil || len(l3.Keys) != 1 || l3.Keys[0].Principal != "bob" {
		t.Fatalf("remove: %v %+v", err, l3)
	}
	if _, err := Apply(&l3, change("remove", bob, "bob", key(t, "bob", bob), List{}, head), head); err == nil || !strings.Contains(err.Error(), "last trusted key") {
		t.Errorf("removing the last key: %v", err)
	}
	// A removed key can no longer sign.
	st := NewDecision(warrant.DecisionApproved, "s", "t", warrant.Digest("sha256:"+strings.Repeat("0", 64)), false, "alice", head, time.Now())
	b, sig, _ := Sign(st, alice)
	if _, _, err := Check(l3, b, sig); err == nil {
		t.Error("a removed key's decision verified")
	}
	if _, _, err := Check(l2, b, sig); err != nil {
		t.Errorf("a trusted key's decision: %v", err)
	}
}

func FuzzParseStatement(f *testing.F) {
	st := NewDecision(warrant.DecisionApproved, "s", "t", warrant.Digest("sha256:"+strings.Repeat("0", 64)), true, "alice", warrant.Genesis(), time.Unix(0, 0))
	b, _ := st.Bytes()
	f.Add(b)
	f.Add([]byte(`{"type":"toolwarrant-trust/v1","action":"add","subject":{"principal":"x","key":"k","fingerprint":"f"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseStatement(data)
		if err != nil {
			return
		}
		// A statement that parses is canonical: re-encoding it gives the same bytes.
		again, err := s.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseStatement(again); err != nil {
			t.Fatalf("re-encoded statement refused: %v", err)
		}
	})
}

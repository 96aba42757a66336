package trust

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentgate-dev/agentgate/internal/sshsig"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// ErrNoList means the trust list has not been initialised: nobody can decide or change
// it yet. It matches warrant.ErrForbidden.
var ErrNoList = fmt.Errorf("%w: there is no trust list", warrant.ErrForbidden)

// UntrustedError is a key that is not on the trust list. It matches
// warrant.ErrForbidden.
type UntrustedError struct {
	// Fingerprint is the key's SHA256 fingerprint.
	Fingerprint string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("key %s is not on the trust list", e.Fingerprint)
}

// Unwrap returns warrant.ErrForbidden.
func (e *UntrustedError) Unwrap() error { return warrant.ErrForbidden }

// Trusted returns the key with fingerprint fp: ErrNoList when there is no list yet,
// an *UntrustedError when the key is not on it.
func (st State) Trusted(fp string) (Key, error) {
	if st.List == nil {
		return Key{}, ErrNoList
	}
	k, ok := st.List.ByFingerprint(fp)
	if !ok {
		return Key{}, &UntrustedError{Fingerprint: fp}
	}
	return k, nil
}

// AuditLog is the part of the catalog the trust list is read from (warrant.Catalog has
// it).
type AuditLog interface {
	AuditHead(ctx context.Context) (warrant.AuditHead, error)
	AuditRecords(ctx context.Context, after int64, limit int) ([]warrant.AuditRecord, error)
}

// replayPage is how many audit records Replay reads at a time.
const replayPage = 1000

// Load reads the audit head and replays the trust list up to it: the state a signer
// reads before signing over that head.
func Load(ctx context.Context, log AuditLog) (State, warrant.AuditHead, error) {
	head, err := log.AuditHead(ctx)
	if err != nil {
		return State{}, warrant.AuditHead{}, err
	}
	st, err := Replay(ctx, log, head)
	return st, head, err
}

// Replay replays the trust list from the trust entries of the audit log up to head.
// It checks only those entries (audit verify checks everything).
func Replay(ctx context.Context, log AuditLog, head warrant.AuditHead) (State, error) {
	var st State
	var after int64
	for after < head.Seq {
		recs, err := log.AuditRecords(ctx, after, replayPage)
		if err != nil {
			return st, err
		}
		for _, r := range recs {
			if r.Seq > head.Seq {
				return st, nil
			}
			after = r.Seq
			if r.Type != EventTrustChanged {
				continue
			}
			var body struct {
				Event json.RawMessage `json:"event"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				return st, fmt.Errorf("audit entry %d: %v", r.Seq, err)
			}
			if p := st.Step(r, body.Event); len(p) > 0 {
				return st, fmt.Errorf("audit entry %d: %s (run 'toolwarrant audit verify')", r.Seq, p[0])
			}
		}
		if len(recs) < replayPage {
			break
		}
	}
	return st, nil
}

// SSHAttester is how a decision is attested on one machine: by a person's SSH key on the
// trust list, signing the decision statement with OpenSSH's SSHSIG in namespace
// toolwarrant-approval. It implements warrant.Attester.
type SSHAttester struct {
	// Signer is the person's key (a key file or ssh-agent).
	Signer sshsig.Signer
	// Log is the audit log the trust list is replayed from.
	Log AuditLog
}

var _ warrant.Attester = SSHAttester{}

// Decider replays the trust list up to head and returns the principal of the signer's
// key on it: ErrNoList, or an *UntrustedError for a key not on it.
func (a SSHAttester) Decider(ctx context.Context, head warrant.AuditHead) (string, error) {
	if a.Signer == nil || a.Log == nil {
		return "", errors.New("ssh attester: Signer and Log are required")
	}
	st, err := Replay(ctx, a.Log, head)
	if err != nil {
		return "", err
	}
	k, err := st.Trusted(a.Signer.Public().Fingerprint())
	if err != nil {
		return "", err
	}
	return k.Principal, nil
}

// Same compares principals exactly.
func (SSHAttester) Same(a, b string) bool { return a == b }

// Attest signs the claim's decision statement (NewDecision) with the person's key and
// returns its canonical bytes and the armored signature.
func (a SSHAttester) Attest(_ context.Context, c warrant.Claim) ([]byte, []byte, error) {
	return Sign(NewDecision(c.Kind, c.Server, c.Tool, c.Digest, c.AcceptedSuspicious, c.Decider, c.Head, c.At), a.Signer)
}

var _ warrant.BulkAttester = SSHAttester{}

// AttestBulk signs the claim's bulk approval statement (NewBulkApproval) with the
// person's key and returns its canonical bytes and the armored signature.
func (a SSHAttester) AttestBulk(_ context.Context, c warrant.BulkClaim) ([]byte, []byte, error) {
	return Sign(NewBulkApproval(c.Server, c.Items, c.Decider, c.Head, c.At), a.Signer)
}

var _ warrant.PolicyAttester = SSHAttester{}

// AttestPolicy signs the claim's policy change statement (NewPolicyChange) with the
// person's key and returns its canonical bytes and the armored signature.
func (a SSHAttester) AttestPolicy(_ context.Context, c warrant.PolicyClaim) ([]byte, []byte, error) {
	return Sign(NewPolicyChange(c.Action, c.Policy, c.Digest, c.Decider, c.Head, c.At), a.Signer)
}

package awstest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// KMS runs in-process (internal/kmssigner/kmstest, local-kms), so moto's IAM never sees
// it. KMSAuthorize is what that server asks instead: AWS's rules for a KMS key, where the
// key policy is the primary control:
//
//   - an explicit Deny in the key policy or the caller's identity policies refuses;
//   - a key-policy statement naming the caller (its role, for a session) allows;
//   - a key-policy statement naming the account (arn:…:root) allows only if the caller's
//     identity policies allow the action on the key too;
//   - otherwise the call is refused.
//
// A key with no registered policy has KMS's default key policy (the account, i.e. IAM,
// decides). ApplyKeyPolicy registers a template key's policy for one test key.

var keyPolicies sync.Map // key ARN → []Statement

// ApplyKeyPolicy resolves template.yaml's key policy of logicalID against res and makes
// KMSAuthorize enforce it for the key res[logicalID] (its ARN). Create the roles the
// policy names (Role) first: a role created later is not in it.
func ApplyKeyPolicy(t testing.TB, logicalID string, res Resources) {
	t.Helper()
	arn := res[logicalID]
	if arn == "" {
		t.Fatalf("awstest: ApplyKeyPolicy: res has no key ARN for %s", logicalID)
	}
	st, err := LoadTemplate(t).KeyPolicy(logicalID, res)
	if err != nil {
		t.Fatalf("awstest: %v", err)
	}
	keyPolicies.Store(arn, st)
	t.Cleanup(func() { keyPolicies.Delete(arn) })
}

// RegisterIdentity makes an access key known to the harness as an administrator (Allow *
// on *): for a KMS-only test client that never talks to moto.
func RegisterIdentity(akid, arn string) {
	idMu.Lock()
	defer idMu.Unlock()
	identities[akid] = &identity{arn: arn, statements: []Statement{{Effect: "Allow", Action: []string{"*"}, Resource: []string{"*"}}}, admin: true}
}

// KMSError is a refusal in KMS's own terms.
type KMSError struct {
	Status int
	Type   string // AccessDeniedException, ValidationException, UnrecognizedClientException
	Msg    string
}

func (e *KMSError) Error() string { return e.Type + ": " + e.Msg }

// Write writes the refusal as KMS's JSON error.
func (e *KMSError) Write(w http.ResponseWriter) {
	b, _ := json.Marshal(map[string]string{"__type": e.Type, "message": e.Msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// KMSAuthorize checks one KMS JSON request (operation from X-Amz-Target, body as sent)
// against the caller's identity and the key's policy, and KMS's input limits. nil means
// allowed.
func KMSAuthorize(r *http.Request, body []byte) *KMSError {
	akid, _, _ := callerOf(r)
	id := lookup(akid)
	if id == nil {
		return &KMSError{400, "UnrecognizedClientException", "The security token included in the request is invalid."}
	}
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	var in struct {
		KeyID       string `json:"KeyId"`
		Message     string
		MessageType string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return &KMSError{400, "SerializationException", err.Error()}
	}
	if op == "Sign" || op == "Verify" {
		msg, err := base64.StdEncoding.DecodeString(in.Message)
		if err != nil {
			return &KMSError{400, "SerializationException", "Message is not base64"}
		}
		if len(msg) > MaxKMSMessageBytes {
			return &KMSError{400, "ValidationException", fmt.Sprintf("1 validation error detected: Value at 'message' failed to satisfy constraint: Member must have length less than or equal to %d (awstest: %d bytes)", MaxKMSMessageBytes, len(msg))}
		}
		if in.MessageType == "DIGEST" && len(msg) != 32 && len(msg) != 48 && len(msg) != 64 {
			return &KMSError{400, "ValidationException", fmt.Sprintf("Digest is invalid length for algorithm (awstest: %d bytes)", len(msg))}
		}
	}
	resource := "*"
	switch {
	case strings.HasPrefix(in.KeyID, "arn:"):
		resource = in.KeyID
	case in.KeyID != "" && !strings.HasPrefix(in.KeyID, "alias/"):
		resource = fmt.Sprintf("arn:aws:kms:%s:%s:key/%s", CurrentRegion(), Account, in.KeyID)
	case in.KeyID != "":
		resource = fmt.Sprintf("arn:aws:kms:%s:%s:%s", CurrentRegion(), Account, in.KeyID)
	}
	q := Request{Principal: id.arn, Action: "kms:" + op, Resource: resource, Context: map[string][]string{"kms:CallerAccount": {Account}}}
	iamDec, err := Evaluate(id.statements, q)
	if err != nil || iamDec == Denied {
		return &KMSError{400, "AccessDeniedException", fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s with an explicit deny (%v)", id.arn, q.Action, resource, err)}
	}
	var policy []Statement
	if v, ok := keyPolicies.Load(resource); ok {
		policy = v.([]Statement)
	} else {
		policy = []Statement{{Effect: "Allow", Principal: []string{"arn:aws:iam::" + Account + ":root"}, Action: []string{"kms:*"}, Resource: []string{"*"}}}
	}
	keyDec, err := Evaluate(policy, q)
	if err != nil || keyDec == Denied {
		return &KMSError{400, "AccessDeniedException", fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s with an explicit deny in the key policy (%v)", id.arn, q.Action, resource, err)}
	}
	if keyDec == Allowed {
		return nil
	}
	root := q
	root.Principal = "arn:aws:iam::" + Account + ":root"
	if rootDec, _ := Evaluate(policy, root); rootDec == Allowed && iamDec == Allowed {
		return nil
	}
	return &KMSError{400, "AccessDeniedException", fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because no resource-based policy allows the %s action", id.arn, q.Action, resource, q.Action)}
}

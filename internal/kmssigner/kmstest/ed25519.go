package kmstest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentgate-dev/agentgate/internal/awstest"
)

// KMS has signed with Ed25519 keys since 2025 (KeySpec ECC_NIST_EDWARDS25519, signing
// algorithms ED25519_SHA_512 with MessageType RAW and ED25519_PH_SHA_512 with DIGEST, as
// the SDK's Sign documentation says), but neither emulator does: local-kms's CreateKey
// refuses the spec (its enum stops at ECC_SECG_P256K1) and moto 5.2.1's KeySpec enum lacks
// it. Template.yaml's checkpoint key is one, so the in-process endpoint serves that one
// key spec itself, after the same authorization (identity and key policy) as every other
// call, following the KMS API reference: CreateKey, DescribeKey, GetPublicKey (PKIX DER),
// Sign and Verify (ED25519_SHA_512 only with RAW, ED25519_PH_SHA_512 only with DIGEST;
// messages up to 4096 bytes, checked by awstest.KMSAuthorize), ScheduleKeyDeletion.
// Every other call goes to local-kms.

type edKey struct {
	arn, id string
	priv    ed25519.PrivateKey
	created time.Time
	deleted bool
}

var (
	edMu   sync.Mutex
	edKeys = map[string]*edKey{} // by key ID and by ARN
)

const specEd25519 = "ECC_NIST_EDWARDS25519"

// serveEd25519 answers the request if it is about an Ed25519 key; it reports whether it did.
func serveEd25519(w http.ResponseWriter, op string, body []byte) bool {
	var in struct {
		KeyID            string `json:"KeyId"`
		KeySpec          string
		KeyUsage         string
		Description      string
		Message          []byte
		MessageType      string
		SigningAlgorithm string
		Signature        []byte
	}
	if json.Unmarshal(body, &in) != nil {
		return false
	}
	if op == "CreateKey" {
		if in.KeySpec != specEd25519 {
			return false
		}
		if in.KeyUsage != "SIGN_VERIFY" {
			kmsError(w, "ValidationException", fmt.Sprintf("KeyUsage %s is not compatible with KeySpec %s", in.KeyUsage, in.KeySpec))
			return true
		}
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			kmsError(w, "KMSInternalException", err.Error())
			return true
		}
		idb := make([]byte, 16)
		_, _ = rand.Read(idb)
		h := hex.EncodeToString(idb)
		id := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		k := &edKey{id: id, arn: fmt.Sprintf("arn:aws:kms:%s:%s:key/%s", awstest.CurrentRegion(), awstest.Account, id), priv: priv, created: time.Now()}
		edMu.Lock()
		edKeys[k.id], edKeys[k.arn] = k, k
		edMu.Unlock()
		writeJSON(w, map[string]any{"KeyMetadata": k.metadata(in.Description)})
		return true
	}
	edMu.Lock()
	k := edKeys[strings.TrimSpace(in.KeyID)]
	edMu.Unlock()
	if k == nil {
		return false
	}
	if k.deleted && op != "DescribeKey" {
		kmsError(w, "KMSInvalidStateException", k.arn+" is pending deletion.")
		return true
	}
	algOK := func() bool {
		switch {
		case in.SigningAlgorithm == "ED25519_SHA_512" && in.MessageType != "DIGEST":
			return true
		case in.SigningAlgorithm == "ED25519_PH_SHA_512" && in.MessageType == "DIGEST" && len(in.Message) == 64:
			return true
		}
		kmsError(w, "InvalidKeyUsageException", fmt.Sprintf("signing algorithm %s with message type %q is not valid for this key", in.SigningAlgorithm, in.MessageType))
		return false
	}
	switch op {
	case "DescribeKey":
		writeJSON(w, map[string]any{"KeyMetadata": k.metadata("")})
	case "GetPublicKey":
		der, _ := x509.MarshalPKIXPublicKey(k.priv.Public())
		writeJSON(w, map[string]any{"KeyId": k.arn, "KeySpec": specEd25519, "KeyUsage": "SIGN_VERIFY", "PublicKey": base64.StdEncoding.EncodeToString(der),
			"SigningAlgorithms": []string{"ED25519_SHA_512", "ED25519_PH_SHA_512"}})
	case "Sign":
		if !algOK() {
			return true
		}
		var sig []byte
		if in.SigningAlgorithm == "ED25519_SHA_512" {
			sig = ed25519.Sign(k.priv, in.Message)
		} else {
			s, err := k.priv.Sign(nil, in.Message, &ed25519.Options{Hash: 0x7 /* crypto.SHA512 */})
			if err != nil {
				kmsError(w, "KMSInternalException", err.Error())
				return true
			}
			sig = s
		}
		writeJSON(w, map[string]any{"KeyId": k.arn, "Signature": base64.StdEncoding.EncodeToString(sig), "SigningAlgorithm": in.SigningAlgorithm})
	case "Verify":
		if !algOK() {
			return true
		}
		ok := in.SigningAlgorithm == "ED25519_SHA_512" && ed25519.Verify(k.priv.Public().(ed25519.PublicKey), in.Message, in.Signature)
		if !ok {
			kmsError(w, "KMSInvalidSignatureException", "")
			return true
		}
		writeJSON(w, map[string]any{"KeyId": k.arn, "SignatureValid": true, "SigningAlgorithm": in.SigningAlgorithm})
	case "ScheduleKeyDeletion":
		edMu.Lock()
		k.deleted = true
		edMu.Unlock()
		writeJSON(w, map[string]any{"KeyId": k.arn, "KeyState": "PendingDeletion", "PendingWindowInDays": 7,
			"DeletionDate": float64(time.Now().Add(7 * 24 * time.Hour).Unix())})
	default:
		kmsError(w, "UnsupportedOperationException", op+" is not served for Ed25519 keys by kmstest")
	}
	return true
}

func (k *edKey) metadata(desc string) map[string]any {
	state := "Enabled"
	if k.deleted {
		state = "PendingDeletion"
	}
	return map[string]any{"KeyId": k.id, "Arn": k.arn, "AWSAccountId": awstest.Account, "KeySpec": specEd25519, "CustomerMasterKeySpec": specEd25519,
		"KeyUsage": "SIGN_VERIFY", "SigningAlgorithms": []string{"ED25519_SHA_512", "ED25519_PH_SHA_512"}, "Enabled": !k.deleted, "KeyState": state,
		"Origin": "AWS_KMS", "KeyManager": "CUSTOMER", "Description": desc, "CreationDate": float64(k.created.Unix())}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func kmsError(w http.ResponseWriter, typ, msg string) {
	(&awstest.KMSError{Status: http.StatusBadRequest, Type: typ, Msg: msg}).Write(w)
}

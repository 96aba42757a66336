package sshsig

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// These tests pin what users and stored approvals rely on, independent of how the package
// is built: signatures ssh-keygen made (testdata: public keys and signatures only, no
// private key, so gitleaks has nothing to flag) keep verifying, an Ed25519 signature is
// byte for byte what `ssh-keygen -Y sign` writes, and the error texts the CLI prints stay.

// TestVerifyGolden verifies signatures ssh-keygen 9.2 made over testdata/statement.json in
// namespace toolwarrant-approval, and refuses the RSA one as today (unsupported key type).
func TestVerifyGolden(t *testing.T) {
	msg := readTestdata(t, "statement.json")
	tests := []struct {
		name    string
		wantFP  string
		wantErr error
	}{
		{name: "ed25519", wantFP: "SHA256:h0VeGkDruQKGhmloL50dWU88QShf/UVJsvjwjX7Ty7g"},
		{name: "ecdsa", wantFP: "SHA256:fe/wHGvsCi7KvNEPsGdq+QjZAMM3gDrFOJ/jORu0nxI"},
		{name: "rsa", wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sig := readTestdata(t, "statement.json."+tc.name+".sig")
			got, err := Verify(sig, msg, ns)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Verify = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Fingerprint() != tc.wantFP {
				t.Errorf("fingerprint %s, want %s", got.Fingerprint(), tc.wantFP)
			}
			line := strings.TrimSpace(string(readTestdata(t, "id_"+tc.name+".pub")))
			pub, comment, err := ParseAuthorizedKey(line)
			if err != nil || comment != "testdata-only" {
				t.Fatalf("ParseAuthorizedKey: %v (comment %q)", err, comment)
			}
			if pub.AuthorizedKey()+" testdata-only" != line || pub.Fingerprint() != tc.wantFP {
				t.Errorf("public key round trip: %q %s", pub.AuthorizedKey(), pub.Fingerprint())
			}
			if !bytes.Equal(pub.Blob, got.Blob) || pub.Type != got.Type {
				t.Errorf("the signature's key and the .pub differ")
			}
			if _, err := Verify(sig, append(bytes.Clone(msg), ' '), ns); !errors.Is(err, ErrBadSignature) {
				t.Errorf("Verify of another message: %v", err)
			}
			if _, err := Verify(sig, msg, "toolwarrant-trust"); !errors.Is(err, ErrBadSignature) {
				t.Errorf("Verify in another namespace: %v", err)
			}
		})
	}
}

// TestSignEd25519SameBytesAsSSHKeygen: Ed25519 signing is deterministic, so our armored
// signature must equal ssh-keygen's to the byte.
func TestSignEd25519SameBytesAsSSHKeygen(t *testing.T) {
	sk := testenv.LookPath(t, "ssh-keygen")
	path, _ := keygen(t, "ed25519")
	msgFile := filepath.Join(t.TempDir(), "statement.json")
	msg := readTestdata(t, "statement.json")
	if err := os.WriteFile(msgFile, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sk, "-Y", "sign", "-f", path, "-n", ns, msgFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	want, err := os.ReadFile(msgFile + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Sign(s, msg, ns)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Sign:\n%s\nssh-keygen -Y sign:\n%s", got, want)
	}
}

// TestErrorTexts pins the messages the CLI shows a person who gave the wrong key.
func TestErrorTexts(t *testing.T) {
	rsaLine := strings.TrimSpace(string(readTestdata(t, "id_rsa.pub")))
	edLine := strings.TrimSpace(string(readTestdata(t, "id_ed25519.pub")))
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"not a key line", func() error { _, _, err := ParseAuthorizedKey("hello"); return err },
			"not an SSH public key line (TYPE BASE64 [comment])"},
		{"rsa key", func() error { _, _, err := ParseAuthorizedKey(rsaLine); return err },
			`unsupported SSH key type (use ssh-ed25519 or ecdsa-sha2-nistp256): "ssh-rsa"`},
		{"type mismatch", func() error {
			_, _, err := ParseAuthorizedKey("ecdsa-sha2-nistp256" + strings.TrimPrefix(edLine, "ssh-ed25519"))
			return err
		}, "SSH public key: line says ecdsa-sha2-nistp256, key is ssh-ed25519"},
		// Options before the type are refused (the text past the prefix is base64's).
		{"options", func() error { _, _, err := ParseAuthorizedKey(`restrict ` + edLine); return err },
			"SSH public key: "},
		{"not pem", func() error { _, err := ParsePrivateKey([]byte(edLine)); return err },
			"not an OpenSSH private key (BEGIN OPENSSH PRIVATE KEY)"},
		{"no agent", func() error { _, err := AgentSigner("", nil); return err },
			"no ssh-agent: SSH_AUTH_SOCK is not set"},
		{"empty namespace", func() error { _, err := Sign(nil, []byte("m"), ""); return err },
			"sshsig: empty namespace"},
		{"not armored", func() error { _, err := Verify([]byte("x"), []byte("m"), ns); return err },
			"malformed SSH signature: no -----BEGIN SSH SIGNATURE----- line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || err.Error() != tc.want && !(strings.HasSuffix(tc.want, ": ") && strings.HasPrefix(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestEncryptedKeyText(t *testing.T) {
	sk := testenv.LookPath(t, "ssh-keygen")
	path := filepath.Join(t.TempDir(), "id")
	if out, err := exec.Command(sk, "-q", "-t", "ed25519", "-N", "secret passphrase", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	const want = "the key file is passphrase-protected; add it to ssh-agent (ssh-add) and use the agent instead"
	if _, err := LoadKeyFile(path); err == nil || err.Error() != want {
		t.Errorf("encrypted key: %v, want %q", err, want)
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

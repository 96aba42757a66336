package keysigner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/signer/signertest"
)

func TestConformance(t *testing.T) {
	for _, alg := range []Algorithm{ECDSAP256, Ed25519} {
		t.Run(string(alg), func(t *testing.T) {
			n := 0
			signertest.Run(t, func(t *testing.T) signer.Signer {
				n++
				s, err := Create(filepath.Join(t.TempDir(), fmt.Sprintf("k%d.pem", n)), alg)
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.key")
	s, err := Create(path, ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %o", st.Mode().Perm())
	}
	if _, err := Create(path, ECDSAP256); err == nil {
		t.Error("Create overwrote an existing key")
	}
	l, err := Load(path)
	if err != nil || l.KeyID() != s.KeyID() {
		t.Fatalf("Load: %v, key id %s vs %s", err, l.KeyID(), s.KeyID())
	}
	os.Chmod(path, 0o640)
	if _, err := Load(path); !errors.Is(err, ErrPermissions) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group-readable key: %v", err)
	}
	if v := fmt.Sprint(s.LogValue()); strings.Contains(v, "PRIVATE") || !strings.Contains(v, s.KeyID()) {
		t.Errorf("LogValue = %s", v)
	}
}

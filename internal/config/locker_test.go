package config

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadLocker(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Mode
		wantErr []string
	}{
		{name: "defaults", env: nil, want: ModeOpen},
		{name: "alias dev", env: map[string]string{"LOCKER_MODE": " DEV "}, want: ModeOpen},
		{name: "txid", env: map[string]string{"LOCKER_MODE": "x402"}, want: ModeTxid},
		{name: "unknown mode refused", env: map[string]string{"LOCKER_MODE": "paid"}, wantErr: []string{`LOCKER_MODE="paid" is not a mode`}},
		{name: "txid with a bad RPC URL", env: map[string]string{"LOCKER_MODE": "txid", "BASE_RPC_URL": "mainnet.base.org"}, wantErr: []string{"BASE_RPC_URL"}},
		{name: "open ignores the RPC URL", env: map[string]string{"BASE_RPC_URL": "mainnet.base.org"}, want: ModeOpen},
		{name: "all problems together", env: map[string]string{"LOCKER_MODE": "nope", "LOCKER_PORT": "99999", "LOCKER_READ_LEASE_SECONDS": "x"},
			wantErr: []string{"LOCKER_MODE", "LOCKER_PORT", "LOCKER_READ_LEASE_SECONDS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadLocker(env(tc.env))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Mode != tc.want {
				t.Errorf("mode = %s, want %s", c.Mode, tc.want)
			}
			if tc.env == nil && (c.Addr() != "127.0.0.1:8000" || c.DBPath != "locker.db" || c.LeaseSeconds != 600) {
				t.Errorf("defaults = %+v", c)
			}
		})
	}
}

func TestLockerLogValueHidesRPCSecrets(t *testing.T) {
	c, err := LoadLocker(env(map[string]string{"LOCKER_MODE": "txid", "BASE_RPC_URL": "https://user:pw@base.example/v2/KEY?token=T",
		"PAYMENT_WALLET_ADDRESS": "0x" + strings.Repeat("ab", 20)}))
	if err != nil {
		t.Fatal(err)
	}
	got := c.LogValue().String()
	for _, secret := range []string{"KEY", "token=T", "pw", "user"} {
		if strings.Contains(got, secret) {
			t.Errorf("LogValue %q shows %q", got, secret)
		}
	}
	if !strings.Contains(got, "https://base.example") || !strings.Contains(got, "required_units=2000") {
		t.Errorf("LogValue %q lacks the endpoint or terms", got)
	}
}

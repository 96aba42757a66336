package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Mode is the daemon's payment mode.
type Mode string

// Payment modes.
const (
	// ModeOpen serves pads for free (LOCKER_MODE open, local or dev).
	ModeOpen Mode = "open"
	// ModeTxid requires a verified on-chain payment per pad (LOCKER_MODE txid or x402).
	ModeTxid Mode = "txid"
)

// Locker is the configuration of lockerd and the pads Lambda.
type Locker struct {
	// Mode is LOCKER_MODE: open (default; aliases local, dev) or txid (alias x402). Any other
	// non-empty value is refused.
	Mode Mode
	// DBPath is LOCKER_DB_PATH, the SQLite file. Default "locker.db".
	DBPath string
	// Host is LOCKER_HOST, the bind address. Default "127.0.0.1".
	Host string
	// Port is LOCKER_PORT. Default 8000; 0 picks a free port (printed at start).
	Port int
	// LeaseSeconds is LOCKER_READ_LEASE_SECONDS, the read_once lease window. Default 600.
	LeaseSeconds int
	// LogLevel is LOCKER_LOG_LEVEL: debug, info (default), warn or error.
	LogLevel slog.Level
	// WalletAddress is PAYMENT_WALLET_ADDRESS, the receiving address in txid mode.
	WalletAddress string
	// RPCURL is BASE_RPC_URL. Default "https://mainnet.base.org".
	RPCURL string
	// RequiredUnits is REQUIRED_USDC_UNITS, the minimum payment in token units. Default 2000.
	RequiredUnits int64
	// USDCContract is USDC_CONTRACT. Default Base native USDC.
	USDCContract string
	// ReadTimeout is LOCKER_READ_TIMEOUT, lockerd's bound on reading one whole request
	// (headers and body): a client trickling a body is cut off, while an honest one on a
	// slow link sends the largest body (64 KiB) at 2.2 KB/s within the default. Default 30s,
	// 1s to 10m.
	ReadTimeout time.Duration
	// MaxConns is LOCKER_MAX_CONNS, how many connections lockerd serves at once; more wait
	// in the kernel's accept queue. Default 512, 1 to 65535.
	MaxConns int
}

// Addr is Host:Port.
func (c Locker) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// LogValue logs the effective configuration; it holds no secrets. In txid mode it adds the
// payment terms and the RPC endpoint's scheme and host only: RPC URLs often carry an API key
// in their path or query.
func (c Locker) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("mode", string(c.Mode)), slog.String("db_path", c.DBPath),
		slog.String("addr", c.Addr()), slog.Int("lease_seconds", c.LeaseSeconds), slog.Duration("read_timeout", c.ReadTimeout), slog.Int("max_conns", c.MaxConns)}
	if c.Mode == ModeTxid {
		rpc := "(invalid)"
		if u, err := url.Parse(c.RPCURL); err == nil {
			rpc = u.Scheme + "://" + u.Host
		}
		attrs = append(attrs, slog.String("payment_wallet", c.WalletAddress), slog.String("usdc_contract", c.USDCContract),
			slog.Int64("required_units", c.RequiredUnits), slog.String("rpc_endpoint", rpc))
	}
	return slog.GroupValue(attrs...)
}

// validEVMAddress: 0x and 40 hex digits, either case.
func validEVMAddress(s string) bool {
	if len(s) != 42 || s[:2] != "0x" {
		return false
	}
	for i := 2; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// LoadLocker reads the Locker configuration through getenv.
func LoadLocker(getenv func(string) string) (Locker, error) {
	c := Locker{DBPath: "locker.db", Host: "127.0.0.1", Port: 8000, LeaseSeconds: 600, LogLevel: slog.LevelInfo, ReadTimeout: 30 * time.Second, MaxConns: 512,
		RPCURL: "https://mainnet.base.org", RequiredUnits: 2000, USDCContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"}
	var errs []error
	switch m := strings.ToLower(strings.TrimSpace(getenv("LOCKER_MODE"))); m {
	case "", "open", "local", "dev":
		c.Mode = ModeOpen
	case "txid", "x402":
		c.Mode = ModeTxid
	default:
		errs = append(errs, fmt.Errorf("LOCKER_MODE=%q is not a mode: use open (free pads) or txid (pay per pad)", m))
	}
	if v := getenv("LOCKER_DB_PATH"); v != "" {
		c.DBPath = v
	}
	if v := getenv("LOCKER_HOST"); v != "" {
		c.Host = v
	}
	intVar(getenv, "LOCKER_PORT", &c.Port, 0, 65535, &errs) // 0 picks a free port
	intVar(getenv, "LOCKER_READ_LEASE_SECONDS", &c.LeaseSeconds, 1, 1<<31-1, &errs)
	intVar(getenv, "LOCKER_MAX_CONNS", &c.MaxConns, 1, 65535, &errs)
	if v := strings.TrimSpace(getenv("LOCKER_READ_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 10*time.Minute {
			errs = append(errs, fmt.Errorf("LOCKER_READ_TIMEOUT=%q must be a duration from 1s to 10m, such as 30s", v))
		} else {
			c.ReadTimeout = d
		}
	}
	if v := strings.TrimSpace(getenv("LOCKER_LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("LOCKER_LOG_LEVEL=%q: use debug, info, warn or error", v))
		}
	}
	c.WalletAddress = strings.TrimSpace(getenv("PAYMENT_WALLET_ADDRESS"))
	if c.WalletAddress != "" && !validEVMAddress(c.WalletAddress) {
		errs = append(errs, fmt.Errorf("PAYMENT_WALLET_ADDRESS=%q is not a 0x-prefixed 20-byte address", c.WalletAddress))
	}
	if v := strings.TrimSpace(getenv("BASE_RPC_URL")); v != "" {
		c.RPCURL = v
	}
	if u, err := url.Parse(c.RPCURL); c.Mode == ModeTxid && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, errors.New("BASE_RPC_URL must be an http or https URL"))
	}
	if v := strings.TrimSpace(getenv("REQUIRED_USDC_UNITS")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("REQUIRED_USDC_UNITS=%q must be a positive integer", v))
		}
		c.RequiredUnits = n
	}
	if v := strings.TrimSpace(getenv("USDC_CONTRACT")); v != "" {
		if !validEVMAddress(v) {
			errs = append(errs, fmt.Errorf("USDC_CONTRACT=%q is not a 0x-prefixed 20-byte address", v))
		}
		c.USDCContract = v
	}
	return c, errors.Join(errs...)
}

// boolVar sets *dst from the variable name when it is 1 or true (0, false and unset leave
// it false) and reports any other value.
func boolVar(getenv func(string) string, name string, dst *bool, errs *[]error) {
	switch v := strings.TrimSpace(getenv(name)); v {
	case "", "0", "false":
	case "1", "true":
		*dst = true
	default:
		*errs = append(*errs, fmt.Errorf("%s=%q must be 1 or 0", name, v))
	}
}

// tableVar returns the required DynamoDB table name in the variable name (the table of
// what), reporting it unset or malformed; rule, when set, is appended to the malformed
// message.
func tableVar(getenv func(string) string, name, what, rule string, errs *[]error) string {
	v := strings.TrimSpace(getenv(name))
	switch {
	case v == "":
		*errs = append(*errs, fmt.Errorf("%s is not set: name the DynamoDB %s table (template.yaml sets it)", name, what))
	case !validTableName(v):
		*errs = append(*errs, fmt.Errorf("%s=%q is not a DynamoDB table name%s", name, v, rule))
	}
	return v
}

func intVar(getenv func(string) string, name string, dst *int, lo, hi int, errs *[]error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		*errs = append(*errs, fmt.Errorf("%s=%q must be an integer from %d to %d", name, v, lo, hi))
		return
	}
	*dst = n
}

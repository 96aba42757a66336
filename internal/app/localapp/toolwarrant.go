package localapp

import (
	"context"
	"fmt"
	"github.com/agentgate-dev/agentgate/internal/findings"
	"math"
	"os"
	"time"

	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/sqlitestore"
	"github.com/agentgate-dev/agentgate/internal/tiles"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// ToolwarrantConfig says where embedded toolwarrant keeps its files and who it acts as.
type ToolwarrantConfig struct {
	// Catalog is the SQLite catalog file (TOOLWARRANT_CATALOG). Required.
	Catalog string
	// LogKey is the log key file that signs every audit entry (TOOLWARRANT_LOG_KEY).
	// Required unless ReadOnly.
	LogKey string
	// ReadOnly opens the catalog for reading only and loads no log key. The service can
	// then read but records nothing. Default false.
	ReadOnly bool
	// Identity is who the process acts as, recorded with every crawl and added server.
	// Default: the service's ("unknown").
	Identity string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Toolwarrant is embedded toolwarrant: the catalog, its log key and the service over
// them. Close closes the catalog.
type Toolwarrant struct {
	Catalog *sqlitestore.Catalog
	// LogKey signs every audit entry; nil when opened ReadOnly.
	LogKey  *keysigner.Signer
	Service *warrant.Service
}

// OpenToolwarrant opens the catalog, loads the log key (unless c.ReadOnly) and builds the
// service. Its errors name the file and what to do.
func OpenToolwarrant(ctx context.Context, c ToolwarrantConfig) (*Toolwarrant, error) {
	cat, err := sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: c.Catalog, ReadOnly: c.ReadOnly})
	if err != nil {
		return nil, err // the driver's message names the file and the fix
	}
	t := &Toolwarrant{Catalog: cat}
	var auditor warrant.Auditor
	if !c.ReadOnly {
		if t.LogKey, err = keysigner.Load(c.LogKey); err != nil {
			cat.Close()
			return nil, fmt.Errorf("%v (the log key is created by 'toolwarrant init'; set --log-key or TOOLWARRANT_LOG_KEY if it lives elsewhere)", err)
		}
		auditor = &audit.Chainer{Signer: t.LogKey}
	}
	if t.Service, err = warrant.New(warrant.Config{Catalog: cat, Auditor: auditor, Identity: c.Identity, Now: c.Now, FirstSight: findings.FirstSight, ApplyPolicies: true}); err != nil {
		cat.Close()
		return nil, err
	}
	return t, nil
}

// Close closes the catalog.
func (t *Toolwarrant) Close() error { return t.Catalog.Close() }

// CreateToolwarrant creates an empty catalog at c.Catalog and a new log key at c.LogKey
// (keyType ecdsa-p256, the default when "", or ed25519), both with mode 0600, and returns them opened. An existing file is never
// touched: an existing log key is refused before anything is created, and the catalog is
// removed again when the key cannot be written.
func CreateToolwarrant(ctx context.Context, c ToolwarrantConfig, keyType string) (*Toolwarrant, error) {
	if _, err := os.Stat(c.LogKey); err == nil {
		return nil, fmt.Errorf("log key %s already exists; nothing was changed", c.LogKey)
	}
	cat, err := sqlitestore.OpenCatalog(ctx, sqlitestore.CatalogConfig{Path: c.Catalog, Create: true})
	if err != nil {
		return nil, err
	}
	key, err := keysigner.Create(c.LogKey, keysigner.Algorithm(keyType))
	if err != nil {
		cat.Close()
		os.Remove(c.Catalog)
		return nil, err
	}
	svc, err := warrant.New(warrant.Config{Catalog: cat, Auditor: &audit.Chainer{Signer: key}, Identity: c.Identity, Now: c.Now, FirstSight: findings.FirstSight, ApplyPolicies: true})
	if err != nil {
		cat.Close()
		return nil, err
	}
	return &Toolwarrant{Catalog: cat, LogKey: key, Service: svc}, nil
}

// LoadLogKey loads the log key file at path: for checking the log's signatures (its
// public key) and signing checkpoints.
func LoadLogKey(path string) (*keysigner.Signer, error) { return keysigner.Load(path) }

// PublishTiles publishes the audit tree of log to store as static c2sp.org/tlog-tiles
// (internal/tiles; a directory is tiles.Dir): at the checkpoint note, signed by the
// checkpoint key whose verifier key is vkey, the tiles and entry bundles the log gained
// since the checkpoint store holds, then the note as its checkpoint. With rebuild, every
// file is computed from the log again and checked against the store. The log is read
// whole, however long: on one machine it is all there.
func PublishTiles(ctx context.Context, log checkpoint.Log, store tiles.Store, vkey string, note []byte, rebuild bool) (checkpoint.TilesResult, error) {
	w := &tiles.Writer{Store: store, VerifierKey: vkey, MaxEntries: math.MaxInt, Rebuild: rebuild}
	return w.PublishTiles(ctx, log, note)
}

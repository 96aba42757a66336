package blob

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Mem is an in-memory Store for tests and local runs. The zero value is ready to use.
type Mem struct {
	mu   sync.Mutex
	objs map[string][]byte
}

var _ Store = (*Mem)(nil)

// PutIfAbsent implements Store.
func (m *Mem) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.objs[key]; ok {
		if bytes.Equal(old, data) {
			return nil
		}
		return fmt.Errorf("put %s: %w", key, ErrConflict)
	}
	if m.objs == nil {
		m.objs = map[string][]byte{}
	}
	m.objs[key] = bytes.Clone(data)
	return nil
}

// Get implements Store.
func (m *Mem) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objs[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return bytes.Clone(b), nil
}

// List implements Store.
func (m *Mem) List(ctx context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []string{}
	for k := range m.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Replace overwrites an object, bypassing the port: tests use it to play an attacker who
// can write the bucket.
func (m *Mem) Replace(key string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil {
		m.objs = map[string][]byte{}
	}
	m.objs[key] = bytes.Clone(data)
}

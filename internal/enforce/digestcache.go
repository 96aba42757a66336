package enforce

import "sync"

// digestCache maps the raw bytes of a tool object, exactly as listed, to what deciding it
// needs: its name and live digest. Equal bytes canonicalize identically, so a hit is
// exactly as sound as recomputing; only successes are cached. The cache is bounded by the
// bytes of its keys and simply emptied when full, which costs one cold listing.
type digestCache struct {
	mu    sync.RWMutex
	m     map[string]cachedTool
	bytes int
	max   int
}

type cachedTool struct {
	name string
	d    digest
}

func newDigestCache(maxBytes int) *digestCache {
	if maxBytes <= 0 {
		return nil
	}
	return &digestCache{m: map[string]cachedTool{}, max: maxBytes}
}

func (c *digestCache) get(raw []byte) (cachedTool, bool) {
	if c == nil {
		return cachedTool{}, false
	}
	c.mu.RLock()
	t, ok := c.m[string(raw)]
	c.mu.RUnlock()
	return t, ok
}

func (c *digestCache) put(raw []byte, t cachedTool) {
	if c == nil || len(raw) > c.max/4 {
		return
	}
	c.mu.Lock()
	if c.bytes+len(raw) > c.max {
		clear(c.m)
		c.bytes = 0
	}
	if _, ok := c.m[string(raw)]; !ok {
		c.m[string(raw)] = t
		c.bytes += len(raw) + len(t.name)
	}
	c.mu.Unlock()
}

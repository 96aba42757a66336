package warrant

import (
	"fmt"
	"unicode/utf8"
)

// MaxToolNameBytes bounds a tool name: DynamoDB keys a tool's items by its name, and a
// sort key holds at most 1024 bytes. A listed tool with a longer name is refused by
// Ingest (IngestResult.Refused) like one without a name.
const MaxToolNameBytes = 512

// ValidToolName reports whether name can name a tool in the catalog: 1 to
// MaxToolNameBytes bytes of valid UTF-8.
func ValidToolName(name string) bool {
	return name != "" && len(name) <= MaxToolNameBytes && utf8.ValidString(name)
}

// ValidateCrawl checks a crawl record before any driver stores it (Catalog.RecordCrawl):
// a valid server name, a number from 1 and a known source; observations sorted by tool
// with unique, valid tool names (ValidToolName), each with exactly one of a valid digest
// or a refusal; versions and proposals of the crawl's server with valid tool names and
// digests, each version's digest that of its canonical bytes. ErrInvalid names the first
// problem.
func ValidateCrawl(r CrawlRecord) error {
	cr := r.Crawl
	if err := ValidateServerName(cr.Server); err != nil || cr.Seq < 1 || (cr.Source != SourceCrawl && cr.Source != SourceGateway) {
		return fmt.Errorf("crawl %d of %q (source %q): needs a valid server name, a number from 1 and source crawl or gateway: %w", cr.Seq, cr.Server, cr.Source, ErrInvalid)
	}
	for i, o := range cr.Observations {
		if !ValidToolName(o.Tool) || (o.Digest == "") == (o.Refused == "") || (o.Digest != "" && !o.Digest.Valid()) {
			return fmt.Errorf("crawl %d of %q: observation %d (%q): needs a tool name and exactly one of a valid digest or a refusal: %w", cr.Seq, cr.Server, i, o.Tool, ErrInvalid)
		}
		if i > 0 && cr.Observations[i-1].Tool >= o.Tool {
			return fmt.Errorf("crawl %d of %q: observations are not sorted by unique tool name: %w", cr.Seq, cr.Server, ErrInvalid)
		}
	}
	for _, v := range r.Versions {
		if v.Server != cr.Server || !ValidToolName(v.Tool) || !v.Digest.Valid() || DigestOf(v.Canonical) != v.Digest {
			return fmt.Errorf("crawl %d of %q: version %s/%s %s: not this server's, no valid tool name, or its digest is not its bytes': %w", cr.Seq, cr.Server, v.Server, v.Tool, v.Digest, ErrInvalid)
		}
	}
	for _, p := range r.Proposals {
		if p.Server != cr.Server || !ValidToolName(p.Tool) || !p.Digest.Valid() {
			return fmt.Errorf("crawl %d of %q: proposal %s/%s %s: not this server's, or no valid tool name or digest: %w", cr.Seq, cr.Server, p.Server, p.Tool, p.Digest, ErrInvalid)
		}
	}
	return nil
}

// After returns the server's crawl counters once c is recorded: LastCrawl is c.Seq, and
// LastSourceCrawl too when c is a crawl (a gateway record leaves it).
func (s Server) After(c Crawl) Server {
	s.LastCrawl = c.Seq
	if c.Source == SourceCrawl {
		s.LastSourceCrawl = c.Seq
	}
	return s
}

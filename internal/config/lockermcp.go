package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// TicketTransport is how lockermcp presents a read ticket to the daemon.
type TicketTransport string

// Ticket transports (LOCKER_TICKET_TRANSPORT).
const (
	// TicketHeader sends "Authorization: Bearer <ticket>" (the default): the ticket never
	// appears in a URL, so proxies and access logs do not record it.
	TicketHeader TicketTransport = "header"
	// TicketQuery sends the legacy "?ticket=<ticket>" form, for a daemon behind a proxy that
	// strips Authorization. The ticket is then part of the URL; lockermcp scrubs URLs from
	// every error text, but intermediaries may still log it.
	TicketQuery TicketTransport = "query"
)

// LockerMCP is the configuration of lockermcp (the MCP server and its inspect command).
type LockerMCP struct {
	// URL is LOCKER_URL, the daemon's base URL: http or https, no credentials, query or
	// fragment; a trailing slash is removed. Required: there is no default.
	URL string
	// TicketTransport is LOCKER_TICKET_TRANSPORT: header (default) or query (trimmed,
	// case-insensitive). Any other value is refused.
	TicketTransport TicketTransport
}

// LogValue logs the effective configuration; LOCKER_URL cannot hold credentials, so it is
// safe to log.
func (c LockerMCP) LogValue() slog.Value {
	return slog.GroupValue(slog.String("locker_url", c.URL), slog.String("ticket_transport", string(c.TicketTransport)))
}

// LoadLockerMCP reads the LockerMCP configuration through getenv and reports every problem
// together.
func LoadLockerMCP(getenv func(string) string) (LockerMCP, error) {
	c := LockerMCP{TicketTransport: TicketHeader}
	var errs []error
	u, err := CheckLockerURL(getenv("LOCKER_URL"))
	if err != nil {
		errs = append(errs, err)
	}
	c.URL = u
	switch v := strings.ToLower(strings.TrimSpace(getenv("LOCKER_TICKET_TRANSPORT"))); v {
	case "", "header":
		c.TicketTransport = TicketHeader
	case "query":
		c.TicketTransport = TicketQuery
	default:
		errs = append(errs, fmt.Errorf("LOCKER_TICKET_TRANSPORT=%q is not a transport: use header (Authorization: Bearer, the default) or query (?ticket=)", v))
	}
	return c, errors.Join(errs...)
}

// CheckLockerURL validates a daemon base URL as LOCKER_URL requires and returns it without a
// trailing slash. The error names LOCKER_URL and never repeats a credential.
func CheckLockerURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("LOCKER_URL is not set: set it to the daemon's base URL, e.g. LOCKER_URL=http://127.0.0.1:8000")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("LOCKER_URL is not a valid URL: use e.g. http://127.0.0.1:8000")
	}
	if u.User != nil {
		return "", errors.New("LOCKER_URL must not contain credentials (user:password@); they would end up in logs")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("LOCKER_URL=%q must be an http:// or https:// URL", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("LOCKER_URL=%q has no host", raw)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("LOCKER_URL must not have a query or fragment: give the daemon's base URL only")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

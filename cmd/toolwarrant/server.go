package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/approvalsapi"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/netguard"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func (a *app) serverCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "server",
		Short:   "Add, pin and list the upstream MCP servers in the catalog",
		Long:    "Add, pin and list the upstream MCP servers in the catalog." + exitCodes("success", ""),
		Example: "  toolwarrant server add weather https://weather.example.com/mcp\n  toolwarrant server pin weather tls\n  toolwarrant server list",
		Args:    cli.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.serverAddCmd(), a.serverListCmd(), a.serverPinCmd())
	return c
}

func (a *app) serverAddCmd() *cobra.Command {
	var allowPrivate bool
	var headerEnv, headerSecret []string
	c := &cobra.Command{
		Use:   "add NAME URL",
		Short: "Add an upstream MCP server (Streamable HTTP, or legacy SSE)",
		Long: `Add an upstream MCP server by its Streamable HTTP (or legacy SSE) endpoint.

NAME is 1 to 64 letters, digits, '.', '_' or '-'. The crawler refuses to connect to
loopback, private (RFC 1918, CGNAT), link-local and IPv6 unique-local addresses — checked
after DNS resolution and on every redirect — unless you pass --allow-private, for a server
on this machine or your intranet. Cloud metadata addresses are always refused.

--header-env HEADER=ENVVAR (repeatable) sends HEADER on every request to the server, with
the value of the environment variable ENVVAR at crawl time. Only the two names are stored;
the value never enters the catalog.

Adding a server that is already there with the same settings changes nothing.

With --remote (a SAM deployment) the server is added through the approvals API as your IAM
principal (your role needs the stack's CatalogAdminPolicyArn), and the next scheduled crawl
queues it. There a header's value comes from a Secrets Manager secret or SSM parameter,
--header-secret HEADER=ARN, which the stack's CrawlHeaderSecretArns must list; --header-env
and --allow-private are refused (the crawl function reaches only public addresses).` + exitCodes("the server was added (or was already there, unchanged)", "") + remoteNote,
		Example: `  toolwarrant server add weather https://weather.example.com/mcp --header-env Authorization=WEATHER_TOKEN
  toolwarrant server add local http://127.0.0.1:3001/mcp --allow-private
  toolwarrant server add weather https://weather.example.com/mcp --remote "$APPROVALS_API_URL" \
    --header-secret Authorization=arn:aws:secretsmanager:eu-west-1:123456789012:secret:weather-token-AbCdEf`,
		Args: cli.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, rawURL := args[0], args[1]
			if err := warrant.ValidateServerName(name); err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			var refs []warrant.HeaderRef
			for _, h := range headerEnv {
				ref, err := config.ParseHeaderEnv(h)
				if err != nil {
					return cli.Usage(cmd, "%v", err)
				}
				refs = append(refs, ref)
			}
			// Refuse now what the crawler would refuse anyway: odd IPv4 spellings, literal
			// private or metadata addresses, userinfo, other schemes. Names are resolved
			// only at crawl time.
			if _, err := netguard.New(netguard.Config{AllowPrivate: allowPrivate}).ParseURL(rawURL); err != nil {
				return cli.Usage(cmd, "server %q: %s", name, refusedURL(rawURL, err, allowPrivate))
			}
			r, err := a.remote(cmd)
			if err != nil {
				return err
			}
			if r != nil {
				return a.remoteAddServer(cmd, r, name, rawURL, allowPrivate, headerEnv, headerSecret)
			}
			if len(headerSecret) > 0 {
				return cli.Usage(cmd, "--header-secret is for --remote (a SAM deployment); here use --header-env HEADER=ENVVAR")
			}
			cat, svc, _, err := a.open(cmd.Context(), cmd, false)
			if err != nil {
				return err
			}
			defer cat.Close()
			added, err := svc.AddServer(cmd.Context(), warrant.Server{Name: name, URL: rawURL, AllowPrivate: allowPrivate, Headers: refs})
			if err != nil {
				return failed(err)
			}
			if !added {
				fmt.Fprintf(a.env.Stdout, "server %s is already in the catalog with these settings; nothing changed\n", name)
				return nil
			}
			extra := ""
			if allowPrivate {
				extra += ", private addresses allowed"
			}
			if len(refs) > 0 {
				var hs []string
				for _, r := range refs {
					hs = append(hs, r.Header+" from $"+r.Env)
				}
				extra += ", headers: " + strings.Join(hs, ", ")
			}
			fmt.Fprintf(a.env.Stdout, "added server %s %s%s\n", name, rawURL, extra)
			for _, r := range refs {
				if a.env.Getenv(r.Env) == "" {
					fmt.Fprintf(a.env.Stderr, "note: %s is not set here; 'toolwarrant crawl' needs it for server %s\n", r.Env, name)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&allowPrivate, "allow-private", false, "allow loopback, private and link-local addresses for this server (never cloud metadata)")
	c.Flags().StringArrayVar(&headerEnv, "header-env", nil, "send `HEADER=ENVVAR`: the header HEADER with the value of $ENVVAR at crawl time (repeatable)")
	c.Flags().StringArrayVar(&headerSecret, "header-secret", nil, "with --remote, send `HEADER=ARN`: the header HEADER with the value of that Secrets Manager secret or SSM parameter at crawl time (repeatable)")
	a.addRemoteFlag(c)
	return c
}

// remoteAddServer adds a server through the approvals API (POST /v1/servers).
func (a *app) remoteAddServer(cmd *cobra.Command, r *approvalsapi.Remote, name, rawURL string, allowPrivate bool, headerEnv, headerSecret []string) error {
	switch {
	case allowPrivate:
		return cli.Usage(cmd, "--allow-private is refused with --remote: the crawl function reaches only public addresses")
	case len(headerEnv) > 0:
		return cli.Usage(cmd, "--header-env is refused with --remote: the crawl function has no such variable; put the value in a secret and use --header-secret HEADER=ARN")
	}
	req := approvalsapi.ServerRequest{Name: name, URL: rawURL}
	for _, h := range headerSecret {
		header, arn, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(header) == "" || !strings.HasPrefix(arn, "arn:") {
			return cli.Usage(cmd, "--header-secret %q: want HEADER=ARN, the ARN of a Secrets Manager secret or SSM parameter", h)
		}
		req.Headers = append(req.Headers, warrant.HeaderRef{Header: strings.TrimSpace(header), Secret: arn})
	}
	added, err := r.AddServer(cmd.Context(), req)
	if err != nil {
		return remoteFailed(err)
	}
	if !added {
		fmt.Fprintf(a.env.Stdout, "server %s is already in the catalog with these settings; nothing changed\n", name)
		return nil
	}
	fmt.Fprintf(a.env.Stdout, "added server %s %s; the next scheduled crawl queues it\n", name, rawURL)
	return nil
}

// serverJSON is one server in `server list --json` (docs/toolwarrant.md).
type serverJSON struct {
	Name         string              `json:"name"`
	URL          string              `json:"url"`
	AllowPrivate bool                `json:"allowPrivate"`
	Headers      []warrant.HeaderRef `json:"headers"`
	AddedAt      time.Time           `json:"addedAt"`
	AddedBy      string              `json:"addedBy"`
	LastCrawl    int64               `json:"lastCrawl"`
	// Package is the newest package pin (server pin); null when none.
	Package *pinJSON `json:"package"`
}

func (a *app) serverListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the servers in the catalog, sorted by name",
		Long:    "List the servers in the catalog, sorted by name, with their headers (names only)." + exitCodes("success", ""),
		Example: "  toolwarrant server list\n  toolwarrant server list --json",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, _, _, err := a.open(cmd.Context(), cmd, true)
			if err != nil {
				return err
			}
			defer cat.Close()
			servers, err := cat.Servers(cmd.Context())
			if err != nil {
				return failed(err)
			}
			if asJSON {
				out := struct {
					Servers []serverJSON `json:"servers"`
				}{Servers: []serverJSON{}}
				for _, s := range servers {
					h := s.Headers
					if h == nil {
						h = []warrant.HeaderRef{}
					}
					out.Servers = append(out.Servers, serverJSON{s.Name, s.URL, s.AllowPrivate, h, s.AddedAt, s.AddedBy, s.LastCrawl, pinOut(s.Package)})
				}
				return writeJSON(a.env.Stdout, out)
			}
			if len(servers) == 0 {
				fmt.Fprintln(a.env.Stdout, "no servers; add one with 'toolwarrant server add NAME URL'")
				return nil
			}
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tURL\tPRIVATE\tHEADERS\tCRAWLS\tPACKAGE")
			for _, s := range servers {
				var hs []string
				for _, h := range s.Headers {
					if h.Secret != "" {
						hs = append(hs, h.Header+"="+h.Secret) // read by the crawl function on AWS
					} else {
						hs = append(hs, h.Header+"=$"+h.Env)
					}
				}
				headers := strings.Join(hs, ",")
				if headers == "" {
					headers = "-"
				}
				private := "no"
				if s.AllowPrivate {
					private = "allowed"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, s.URL, private, headers, s.LastCrawl, pinSummary(s.Package))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document (fields in docs/toolwarrant.md)")
	return c
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// refusedURL says why a server URL is refused and what to do, in the user's terms rather
// than netguard's: the hint to add --allow-private only where it would help.
func refusedURL(rawURL string, err error, allowPrivate bool) string {
	shown := rawURL
	if strings.Contains(rawURL, "@") { // never a password
		u, perr := url.Parse(rawURL)
		if perr != nil || u.User == nil || u.Host == "" {
			return "the URL (not shown: it holds userinfo) is refused: give credentials with --header-env, never in the URL"
		}
		shown = u.Redacted()
	}
	if !strings.Contains(rawURL, "://") {
		return fmt.Sprintf("URL %q has no scheme: write it as https://%s (or http:// for a server on this machine)", shown, shown)
	}
	var ae *netguard.AddressError
	if errors.As(err, &ae) {
		what := fmt.Sprintf("URL %q points at %s, a %s address", shown, ae.Addr, ae.Class)
		switch {
		case errors.Is(err, netguard.ErrMetadataAddress):
			return what + ": cloud metadata addresses are always refused"
		case strings.Contains(err.Error(), "(spelled "):
			// Refused whatever --allow-private says: it hides the address from a reader.
			return fmt.Sprintf("URL %q spells the %s address %s unusually: write it as %s", shown, ae.Class, ae.Addr, ae.Addr)
		case ae.Class.Private() && !allowPrivate:
			return what + ": for a server on this machine or your intranet, add --allow-private"
		}
		return what + ", which is never allowed"
	}
	why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), netguard.ErrInvalidURL.Error()), ": ")
	if strings.HasSuffix(why, " has userinfo") {
		why = "it holds userinfo: give credentials with --header-env, never in the URL"
	}
	return fmt.Sprintf("URL %q is refused: %s", shown, why)
}

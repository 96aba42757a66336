package findings

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The phrase vocabularies. Every pattern is case-insensitive and matched within one
// sentence (see segments). A rule's clause fires when each of its parts matches
// somewhere in the sentence; docs/findings.md lists the clauses and their severities.
const (
	q = "['\"`]?" // an optional quote around a name

	// Places that hold keys, credentials and client configuration.
	pSecretPath = `~/\.ssh\b[\w/.-]*|\.ssh/[\w/.-]*|\bid[ _-]?(?:rsa|dsa|ecdsa|ed25519)\b(?:\.pub)?|\bauthorized[ _-]keys\b|` +
		`~/\.aws\b[\w/.-]*|\.aws/(?:credentials|config)\b|\baws[ _-]secret[ _-]access[ _-]key\b|` +
		"(?:^|[\\s'\"`(/~])\\.env(?:\\.[a-z]+)?\\b|" +
		`\bmcp\.json\b|~/\.cursor\b[\w/.-]*|\.cursor/[\w/.-]*|\bclaude[ _-]desktop[ _-]config(?:\.json)?\b|\bmcp[ _-]config(?:uration)?s?\b|` +
		`\.npmrc\b|\.pypirc\b|\.netrc\b|\.pgpass\b|\.git-credentials\b|\.kube/config\b|\.docker/config\.json\b|` +
		`/etc/(?:passwd|shadow|sudoers)\b|\.gnupg\b|\.password-store\b|\.(?:bash|zsh)_history\b|\bwallet\.dat\b|` +
		`\bcredentials\.json\b|\bsecrets\.(?:json|ya?ml|toml)\b|\bkeychain\b|-----begin [a-z ]*private key-----`
	// Secrets by name.
	pSecretNoun = `\bprivate[ _-]?keys?\b|\bssh[ _-]?keys?\b|\b(?:seed|recovery|mnemonic)[ _-]phrases?\b|\bpass(?:word|phrase)s?\b|` +
		`\bapi[ _-]?keys?\b|\b(?:access|auth|bearer|refresh|session|api|github|personal[ _-]access)[ _-]?tokens?\b|` +
		`\bsecret[ _-]?keys?\b|\bsecrets\b|\bcredentials?\b|\bsession[ _-]cookies?\b|\bkeystore\b`
	// What a conversation and a workspace hold that the user did not choose to send.
	pContext = `\b(?:conversation|chat|message|messaging|dialog(?:ue)?) (?:history|histories|logs?|transcripts?|contents?)\b|` +
		`\b(?:entire|full|whole|complete) (?:conversation|chat|history|transcript|context|dialog(?:ue)?|thread)s?\b|` +
		`\b(?:previous|prior|earlier|past|last|recent|other|all(?: (?:the|of the))?) (?:\d+ )?(?:user )?(?:messages|conversations|chats|emails|prompts|exchanges|turns|replies)\b|` +
		`\bsystem prompts?\b|\benvironment variables\b|` +
		`\b(?:the )?user'?s (?:files|documents|data|messages|emails|keys|history|contacts|conversations?|chats?|personal information)\b`

	// Verbs: the imperative and the gerund ("read", "after reading"), which instruct the
	// model, and any form ("reads", for names and for the weaker clauses), which may only
	// describe what the tool itself does.
	pReadImp = `\b(?:read|open|cat|load|fetch|retrieve|collect|gather|grab|extract|dump|copy|access|obtain|steal|harvest|print|get|find|look (?:up|at|in)|search (?:for|in)|` +
		`reading|opening|loading|fetching|retrieving|collecting|gathering|grabbing|extracting|dumping|copying|accessing|obtaining|stealing|harvesting|printing|getting|finding|looking (?:up|at|in))\b`
	pReadAny     = pReadImp + `|\b(?:reads|opens|loads|fetches|retrieves|collects|gathers|extracts|dumps|copies|accesses|obtains|gets|contents?)\b`
	pAcquire     = `\b(?:read|collect|gather|grab|extract|dump|steal|harvest|copy|find|look up|search for|reading|collecting|gathering|grabbing|extracting|dumping|stealing|harvesting|copying|finding)\b`
	pTransferImp = `\b(?:pass|include|put|place|insert|append|attach|paste|send|upload|forward|post|submit|provide|supply|concatenate|concantate|embed|add|transmit|exfiltrate|leak|share|fill in|populate|` +
		`passing|including|putting|placing|inserting|appending|attaching|pasting|sending|uploading|forwarding|posting|submitting|providing|supplying|concatenating|embedding|adding|transmitting|exfiltrating|leaking|sharing)\b|` +
		`\bwith (?:the |its |their |your )?(?:entire|full|whole|complete|all)\b`
	pTransferAny = pTransferImp + `|\b(?:passes|includes|puts|inserts|appends|attaches|sends|uploads|forwards|posts|submits|provides|supplies|embeds|adds|shares|transmits)\b`
	pSendImp     = `\b(?:send|post|upload|forward|transmit|exfiltrate|leak|submit|report|mail|email|e-mail|bcc|relay|redirect|route|deliver|` +
		`sending|posting|uploading|forwarding|transmitting|exfiltrating|leaking|submitting|reporting|mailing|emailing|relaying|redirecting|routing|delivering)\b`
	pSendAny = pSendImp + `|\b(?:sends|sent|posts|uploads|forwards|transmits|submits|reports|mails|emails|relays|redirects|routes|delivers)\b`
	pPossess = `\b(?:your|the user'?s|user'?s|their|all|any|every|stored|saved|local)\b`

	// Somewhere outside the conversation: a URL, an email address, a phone number, an IP
	// address, a webhook or a collector service, a domain name. pDestFixed leaves out the
	// bare word "webhook": alone it names no one ("can send webhook notifications").
	pDest      = pDestAddr + `\bwebhooks?\b|` + pDestRest
	pDestFixed = pDestAddr + pDestRest
	pDestAddr  = `\bhttps?://[^\s"'<>)\]]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\+\d[\d ().-]{6,}\d|`
	pDestRest  = `\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|` +
		`\b(?:ngrok|pastebin|requestbin|pipedream|burpcollaborator|interactsh)\b|\bwebhook\.site\b|` +
		`\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|dev|example|xyz|ru|cn|app|site|online|top|info|biz|me|co|ai|cc|tk|club)\b`
	// A parameter named in words: "as the note parameter", "as 'sidenote'", "in this field".
	pParamWord = `\b(?:as|in|into|inside|to|via|through|within|under) (?:the |a |its |this )?` + q + `[\w-]+` + q + ` (?:parameter|argument|field|param|arg|property|input|key)s?\b|` +
		"\\bas ['\"`][\\w-]+['\"`]|\\b(?:this|that|the) (?:field|parameter|argument)\\b|\\b(?:parameter|argument|field) ['\"`][\\w-]+['\"`]"
	// Persistence and insistence.
	pAlways = `\b(?:always|every time|each time|whenever|from now on|at all times|(?:in|on|for|with) every|all future|without exception|must|also|instead|proxy|bcc|secretly|silently|quietly)\b|\bwhen the user\b`

	// Other tools and servers.
	pBeforeOthers = `\bbefore (?:using|calling|invoking|running|executing|you (?:use|call|run|invoke)) (?:any|every|each|all|the)? ?(?:of the )?(?:other|another) (?:tools?|functions?|servers?)\b|` +
		`\bbefore (?:any|every|each) (?:other )?(?:tool|function)(?: (?:call|use|invocation))?\b`
	pInsteadOf = `\binstead of (?:using |calling )?(?:the )?` + q + `([\w.-]+)` + q + ` (?:tool|function|server)\b|` +
		`\b(?:do not|don't|never) (?:use|call|invoke) (?:the )?` + q + `([\w.-]+)` + q + ` (?:tool|function|server)\b|` +
		`\b(?:the )?` + q + `([\w.-]+)` + q + ` tool (?:must|should|shall|needs to|has to|will now|is required to)\b`
	pOnlyThis    = `\b(?:never|do not|don't) use (?:any )?other tools?\b|\buse only this tool\b|\bthis tool replaces\b`
	pAlsoPresent = `\bwhen this (?:tool|server) is (?:available|present|installed|enabled|loaded|connected)\b|\balso present\b|\bside[ -]effects? on (?:the|another|other|any|all)\b`
	pPrefixAll   = `\b(?:prefix|prepend|append|add|insert)\w*\b[^.]{0,60}?\b(?:every|each|all|any) (?:(?:shell|terminal|bash|git|sql) )?(?:commands?|tool calls?|calls?|requests?|messages?|emails?|responses?|queries|scripts?)\b`
	pBcc         = `\b(?:always|also|secretly|silently|quietly|automatically) (?:bcc|cc|blind[ -]copy|carbon[ -]copy|copy)\b|\b(?:bcc|cc)\b[^.]{0,60}\bon (?:every|all|each)\b`
	pRedirect    = `\b(?:change|set|replace|switch|override|rewrite|redirect)\w* (?:the )?(?:recipient|destination|receiver|to[ -]address|phone number|target (?:number|address))s?\b`
	pTrigger     = `\b(?:when|whenever|if|each time|every time|once) (?:the )?(?:user|someone|anyone) (?:asks?|wants?|requests?|tries|tells?|says?|types?|mentions?|writes?)\b|` +
		`\b(?:when|whenever|if) (?:you are|you're) (?:asked|told|requested) to\b`
	pInsist      = `\b(?:always|also|first|instead|must|make sure|secretly|silently|bcc)\b`
	pOtherServer = `\b(?:other|another|different) (?:mcp )?servers?\b|\b(?:every|all|any) other tools?\b`

	// Hiding from the user, and posing as the system.
	pDontTell = `\b(?:do not|don't|dont|never|must not|should not|shouldn't|without) (?:ever )?(?:tell|telling|mention|mentioning|inform|informing|notify|notifying|alert|alerting|warn|warning|reveal|revealing|disclose|disclosing|show|showing|let|letting|ask|asking)\b(?: \S+){0,4}? (?:the )?(?:user|users|human|person|anyone|them)\b|` +
		`\b(?:do not|don't|never) (?:mention|reveal|disclose|explain|say) (?:this|that|it|these|the fact|anything|how|why|what)\b`
	pUserMustNot = `\b(?:the )?users? (?:must|should|will|does|do|need|needs|is|are)? ?(?:not|n't|never) (?:need to |have to |to )?(?:know|see|notice|find out|be (?:told|informed|aware|notified)|learn|realize|suspect)\b|` +
		`\b(?:hide|conceal|keep)\b(?: \S+){0,4}? (?:secret )?from (?:the )?(?:user|users|human)\b|` +
		`\b(?:secretly|silently|covertly|quietly|discreetly|invisibly) (?:\w+ )?(?:send|sends|read|reads|include|add|pass|forward|call|copy|upload|exfiltrate|bcc|cc|email|post|change|replace|modify)\b|` +
		`\b(?:could|would|will|might|may) (?:\w+ )?(?:upset|worry|alarm|scare|concern|confuse|frighten) the user\b|` +
		`\bwithout (?:the )?user'?s? (?:knowledge|knowing|consent|noticing|seeing|approval)\b`
	pIgnore = `\b(?:ignore|disregard|forget|override) (?:all |any )?(?:of )?(?:the |your )?(?:previous|prior|above|earlier|preceding|other|original|system|user'?s) (?:instructions?|rules|directions|prompts?|guidelines|messages)\b`
	pSystem = `\bthis is (?:a|an) (?:system|admin|administrator|developer|security|mandatory) (?:instruction|message|prompt|requirement|directive|override|notice)\b|\bsystem (?:override|directive)\b`
	pTags   = `< ?/? ?(?:important|system|instructions?|admin|secret|hidden|critical|urgent|sys) ?>|\[ ?(?:system|important|admin|instructions?)(?: (?:message|instruction|note|prompt|override))? ?\]|<!--`
)

// part is one thing a clause needs in the sentence.
type part interface {
	// find returns the leftmost match in seg, and for a tool-name pattern the name.
	find(sc *scanner, seg string) (start, end int, name string, ok bool)
}

// rx is one pattern and the literals it cannot match without. All patterns' literals
// are searched at once, in one pass over a sentence (see prefilter); a pattern none of
// whose literals occurs is not run, which is what keeps a scan fast: most sentences
// contain none of the words a rule needs.
type rx struct {
	re  *regexp.Regexp
	bit uint64 // this pattern's bit in a sentence's prefilter mask; 0: not filtered
}

// patterns are the filtered patterns' literals, in the order re was called; compiled
// are all the patterns, for the test that checks the prefilter never skips a match.
var (
	patterns [][]string
	compiled []rx
)

// re compiles p, which must be lower case: the text matched is lower-cased (ASCII only,
// so that byte offsets are kept) before matching, and has one space between words.
func re(p string) rx {
	r := rx{re: regexp.MustCompile(p)}
	tree, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		panic(err) // MustCompile accepted it
	}
	if l := literals(tree.Simplify()); l != nil {
		if len(patterns) == 64 {
			panic("findings: more than 64 filtered patterns")
		}
		r.bit = 1 << len(patterns)
		patterns = append(patterns, l)
	}
	compiled = append(compiled, r)
	return r
}

func (r rx) find(sc *scanner, seg string) (int, int, string, bool) {
	if r.bit != 0 && sc.mask&r.bit == 0 {
		return 0, 0, "", false
	}
	m := r.re.FindStringSubmatchIndex(seg)
	if m == nil {
		return 0, 0, "", false
	}
	name := ""
	for g := 2; g+1 < len(m); g += 2 {
		if m[g] >= 0 {
			name = seg[m[g]:m[g+1]]
			break
		}
	}
	return m[0], m[1], name, true
}

// literals returns strings one of which every match of r contains, or nil when there is
// no such set. exact literals are the whole of every match (a literal, a small class of
// characters, an alternation of those): concatenating two exact sets multiplies them
// ("p" then "ass|ut" is "pass|put"), while an inexact part ends a run. Of the runs of a
// concatenation, the set whose shortest literal is longest is kept.
func literals(r *syntax.Regexp) []string {
	l, _ := lits(r)
	if len(l) == 0 || shortest(l) == 0 {
		return nil
	}
	// A literal that contains another one of the set adds nothing: "private key" is
	// found wherever "private keys" is.
	slices.SortFunc(l, func(a, b string) int { return len(a) - len(b) })
	var out []string
	for _, s := range l {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.Contains(s, o) }) {
			out = append(out, s)
		}
	}
	return out
}

// maxLiterals bounds a set of literals built by multiplying exact sets.
const maxLiterals = 64

func lits(r *syntax.Regexp) (set []string, exact bool) {
	switch r.Op {
	case syntax.OpLiteral:
		if r.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(r.Rune)}, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpCharClass:
		// A small class of single characters ("[ _-]") is a set of one-rune literals.
		var out []string
		for i := 0; i+1 < len(r.Rune); i += 2 {
			if r.Rune[i] != r.Rune[i+1] || len(out) == 4 {
				return nil, false
			}
			out = append(out, string(r.Rune[i]))
		}
		return out, true
	case syntax.OpCapture:
		return lits(r.Sub[0])
	case syntax.OpQuest:
		if l, ok := lits(r.Sub[0]); ok {
			return append([]string{""}, l...), true
		}
		return []string{""}, false
	case syntax.OpPlus:
		l, _ := lits(r.Sub[0])
		return l, false
	case syntax.OpRepeat:
		if r.Min >= 1 {
			l, _ := lits(r.Sub[0])
			return l, false
		}
		return []string{""}, false
	case syntax.OpAlternate:
		var out []string
		exact := true
		for _, sub := range r.Sub {
			l, ok := lits(sub)
			if l == nil {
				return nil, false
			}
			out = append(out, l...)
			exact = exact && ok
		}
		return out, exact
	case syntax.OpConcat:
		var best []string
		run, exact := []string{""}, true // run: the product of the current run of exact parts
		flush := func() {
			if shortest(run) > shortest(best) {
				best = run
			}
			run = []string{""}
		}
		for _, sub := range r.Sub {
			l, ok := lits(sub)
			if ok && len(run)*len(l) <= maxLiterals {
				run = product(run, l)
				continue
			}
			flush()
			exact = false
			switch {
			case ok:
				run = l
			case l != nil && shortest(l) > shortest(best):
				best = l
			}
		}
		flush()
		return best, exact
	}
	return nil, false
}

func product(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// shortest returns the length of the shortest string of l, -1 for none.
func shortest(l []string) int {
	if len(l) == 0 {
		return -1
	}
	n := len(l[0])
	for _, s := range l[1:] {
		n = min(n, len(s))
	}
	return n
}

// anyOf matches the leftmost match of any of its parts.
type anyOf []part

func (a anyOf) find(sc *scanner, seg string) (int, int, string, bool) {
	best := -1
	var bs, be int
	var bn string
	for _, p := range a {
		if s, e, n, ok := p.find(sc, seg); ok && (best < 0 || s < bs) {
			best, bs, be, bn = 1, s, e, n
		}
	}
	return bs, be, bn, best >= 0
}

// unnegated matches the leftmost match of its pattern that is not negated: not right
// after "do not", "never", "don't", "avoid", "without" and the like ("Do not include any
// API keys" asks for no secret). Only the words just before the verb count, so "never
// forget to include your API key" still matches "include".
type unnegated struct{ rx }

// negated matches a negation that ends where the phrase after it starts; it is applied to
// at most negationWindow bytes before the phrase.
var negated = regexp.MustCompile(`(?:\bnot|\bnever|n't|n’t|\bdont|\bavoid|\brefrain from|\bwithout)(?: ever)? $`)

const negationWindow = 24

func (u unnegated) find(sc *scanner, seg string) (int, int, string, bool) {
	if u.bit != 0 && sc.mask&u.bit == 0 {
		return 0, 0, "", false
	}
	for _, m := range u.re.FindAllStringIndex(seg, -1) {
		if !negated.MatchString(seg[max(0, m[0]-negationWindow):m[0]]) {
			return m[0], m[1], "", true
		}
	}
	return 0, 0, "", false
}

// after matches its part only after the end of the clause's previous part: "if the user
// asks …, include …" is a rule for what the user says; "to include in the results, if
// the user asks …, set this to …" is about this tool's own argument. match applies it.
type after struct{ part }

// paramRef matches one of the target's own property names after "as", "in", "into",
// "to", "the" or "field": "pass its content as sidenote".
type paramRef struct{}

func (paramRef) find(sc *scanner, seg string) (int, int, string, bool) {
	if len(sc.props) == 0 {
		return 0, 0, "", false
	}
	low := seg // already lower case
	for i := 0; i < len(low); {
		j := i
		for j < len(low) && isWordByte(low[j]) {
			j++
		}
		if j > i {
			if w := low[i:j]; isPreposition(w) {
				k := j
				for k < len(low) && (low[k] == ' ' || low[k] == '\'' || low[k] == '"' || low[k] == '`') {
					k++
				}
				e := k
				for e < len(low) && (isWordByte(low[e]) || low[e] == '-') {
					e++
				}
				if e > k && slices.Contains(sc.props, low[k:e]) {
					if e < len(low) && (low[e] == '\'' || low[e] == '"' || low[e] == '`') {
						e++ // the closing quote, for the excerpt
					}
					return i, e, "", true
				}
			}
			i = j
			continue
		}
		i++
	}
	return 0, 0, "", false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func isPreposition(w string) bool {
	switch w {
	case "as", "in", "into", "to", "the", "field", "parameter", "argument", "inside", "within":
		return true
	}
	return false
}

// clause is one pattern of a rule: the parts it needs in one sentence, its severity and
// its reason, where {0}, {1}, ... are the phrases that matched each part, quoted.
type clause struct {
	rule  warrant.Rule
	sev   warrant.Severity
	parts []part
	why   string
	// identOnly: only in names (tool, argument and member names).
	identOnly bool
	// named: parts[0] captures a tool name; the clause does not fire on this tool's own
	// name or on "this", and is INFO with sibling as its reason when the name is one of the
	// server's other tools.
	named   bool
	sibling string
}

var (
	secretPath  = re(pSecretPath)
	secretNoun  = re(pSecretNoun)
	readImp     = re(pReadImp)
	readAny     = re(pReadAny)
	acquire     = re(pAcquire)
	transferImp = re(pTransferImp)
	transferAny = re(pTransferAny)
	sendImp     = re(pSendImp)
	sendAny     = re(pSendAny)
	possess     = re(pPossess)
	dest        = re(pDest)
	paramWord   = re(pParamWord)
	always      = re(pAlways)
	trigger     = re(pTrigger)
	context     = re(pContext)
	sensitive   = anyOf{context, secretPath}
	paramOrDest = anyOf{paramWord, paramRef{}, dest}
	actImp      = anyOf{readImp, transferImp, sendImp}
	moveImp     = anyOf{transferImp, sendImp}
)

const (
	whySecret = "what the model reads can leave in the next call's arguments, and no tool needs the model to fetch its keys for it"
	whyExfil  = "data the user did not choose to share leaves with the call"
	whyShadow = "one server's text steering other tools is how a malicious server hijacks a trusted one"
	whyHide   = "the user can no longer judge what is done on their behalf"

	whyTrigger = "sets a rule for what the user says rather than for this tool's own call ({0} … {1}): read what it asks"
)

// clauses are every rule's patterns, most severe first within each rule: the first
// clause of a rule that matches a sentence is the one reported for it. Each reason says
// what the text asks, quotes the phrases that matched ({0}, {1}, ... in the order of the
// parts), and says why it matters.
var clauses = []clause{
	// (a) Secrets and files outside any tool's purpose.
	{rule: RuleSecretAccess, sev: warrant.Critical, parts: []part{secretPath, actImp},
		why: "tells the model to read or pass on a key, credential or client configuration file ({1} … {0}): " + whySecret},
	{rule: RuleSecretAccess, sev: warrant.Critical, parts: []part{secretPath, readAny}, identOnly: true,
		why: "a name that asks for a key or credential file ({1} … {0}): the model fills a parameter in with what its name says, and " + whySecret},
	{rule: RuleSecretAccess, sev: warrant.Critical, parts: []part{secretNoun, acquire, moveImp},
		why: "tells the model to take a secret and pass it on ({1} … {0} … {2}): " + whySecret},
	{rule: RuleSecretAccess, sev: warrant.Warning, parts: []part{secretNoun, unnegated{transferAny}, possess},
		why: "asks the model to put a secret into the call ({1} … {2} … {0}): secrets in arguments reach the server and its logs; confirm the tool needs them"},
	{rule: RuleSecretAccess, sev: warrant.Warning, parts: []part{secretPath},
		why: "names a key, credential or client configuration location ({0}): confirm the tool needs it"},

	// (b) Sending data elsewhere.
	{rule: RuleExfiltration, sev: warrant.Critical, parts: []part{sensitive, moveImp, paramOrDest},
		why: "tells the model to put private data into a parameter or send it away ({1} … {0} … {2}): " + whyExfil},
	{rule: RuleExfiltration, sev: warrant.Critical, parts: []part{sensitive, moveImp, always},
		why: "tells the model to pass private data on, as a standing rule ({1} … {0} … {2}): " + whyExfil},
	{rule: RuleExfiltration, sev: warrant.Critical, parts: []part{re(pRedirect), dest},
		why: "tells the model to send messages to another destination ({0} … {1}): they reach someone the user did not choose"},
	{rule: RuleExfiltration, sev: warrant.Critical, parts: []part{sendImp, dest, always},
		why: "tells the model to send to a fixed destination, as a standing rule ({0} … {1} … {2}): someone outside the user's request receives the data"},
	{rule: RuleExfiltration, sev: warrant.Warning, parts: []part{sensitive, moveImp},
		why: "asks the model to pass private data on ({1} … {0}): confirm the tool needs it, since " + whyExfil},
	{rule: RuleExfiltration, sev: warrant.Warning, parts: []part{sendAny, re(pDestFixed)},
		why: "speaks of sending to a fixed destination ({0} … {1}): confirm it is the tool's own service"},

	// (c) Other tools and servers.
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{re(pBeforeOthers)},
		why: "puts this tool in front of every other ({0}): " + whyShadow},
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{re(pInsteadOf)}, named: true,
		why:     "redefines the use of another tool ({0}), the shadowing of a tool by another server: " + whyShadow,
		sibling: "speaks of another tool of this same server ({0}): a server pointing to its own tools shadows nothing"},
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{re(pOnlyThis)},
		why: "tells the model to avoid other tools ({0}): " + whyShadow},
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{re(pAlsoPresent)},
		why: "is about the other tools loaded beside it ({0}): " + whyShadow},
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{re(pPrefixAll)},
		why: "changes every other call the model makes ({0}): " + whyShadow},
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{re(pBcc)},
		why: "copies messages to someone the user did not add ({0}): " + whyShadow},
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{re(pRedirect)},
		why: "rewrites the arguments of calls the user asked for ({0}): " + whyShadow},
	{rule: RuleCrossTool, sev: warrant.Critical, parts: []part{trigger, re(pInsist), anyOf{sendAny, re(pBcc), re(`\b(?:other|another) tools?\b|\btools?\b`)}},
		why: "sets a standing rule for what the user asks ({0} … {1} … {2}): " + whyShadow},
	{rule: RuleCrossTool, sev: warrant.Warning, parts: []part{trigger, anyOf{re(pInsist), sendAny}},
		why: whyTrigger},
	{rule: RuleCrossTool, sev: warrant.Warning, parts: []part{trigger, after{moveImp}},
		why: whyTrigger},
	{rule: RuleCrossTool, sev: warrant.Warning, parts: []part{re(pOtherServer)},
		why: "speaks of other servers or tools ({0}): read what it asks of them"},

	// (d) Hiding from the user.
	{rule: RuleConcealment, sev: warrant.Critical, parts: []part{re(pDontTell)},
		why: "tells the model to keep something from the user ({0}): " + whyHide},
	{rule: RuleConcealment, sev: warrant.Critical, parts: []part{re(pUserMustNot)},
		why: "tells the model to act behind the user's back ({0}): " + whyHide},
	{rule: RuleConcealment, sev: warrant.Critical, parts: []part{re(pIgnore)},
		why: "tries to override the model's other instructions ({0}): a tool's text has no authority over them"},
	{rule: RuleConcealment, sev: warrant.Critical, parts: []part{re(pSystem)},
		why: "poses as a system instruction ({0}): a tool's text has no authority over the user's or the client's instructions"},
	{rule: RuleConcealment, sev: warrant.Warning, parts: []part{re(pTags)},
		why: "uses a marker that poses as a priority or system instruction, or hides text from a rendered view ({0}): read what it marks"},
}

// phrases applies the clauses to every sentence of p. hiddenText marks the ASCII decoded
// from tag characters.
func (sc *scanner) phrases(ptr string, p prepared, ident, hiddenText bool) {
	if strings.TrimSpace(p.s) == "" {
		return
	}
	for _, g := range segments(p.s) {
		// A line break inside a sentence reads as a space; same length, same offsets.
		seg := strings.ReplaceAll(p.s[g[0]:g[1]], "\n", " ")
		sc.mask = prefilter.scan(seg)
		done := map[warrant.Rule]bool{}
		for i := range clauses {
			c := &clauses[i]
			if done[c.rule] || c.identOnly && !ident {
				continue
			}
			f, ok := sc.match(c, p, g[0], seg)
			if !ok {
				continue
			}
			done[c.rule] = true
			a, b := p.span(g[0]+f.start, g[0]+f.end)
			f.Pointer = ptr
			f.Excerpt = excerpt(p.orig, a, b)
			if hiddenText {
				f.Reason = "in text hidden in Unicode tag characters, it " + f.Reason
			}
			sc.add(f.Finding)
		}
	}
}

// clauseHit is a clause's match in one sentence: the finding so far and the byte range
// of the sentence that its parts cover.
type clauseHit struct {
	Finding
	start, end int
}

// match applies c to seg, the sentence of p that starts at offset at; the phrases quoted
// in the reason are taken from the original text.
func (sc *scanner) match(c *clause, p prepared, at int, seg string) (clauseHit, bool) {
	m := clauseHit{Finding: Finding{Rule: c.rule, Severity: c.sev}, start: len(seg)}
	phrases := make([]string, len(c.parts))
	why := c.why
	prev := 0 // the end of the previous part's match
	for i, pt := range c.parts {
		var s, e int
		var name string
		var ok bool
		if a, isAfter := pt.(after); isAfter {
			s, e, name, ok = a.find(sc, seg[prev:])
			s, e = s+prev, e+prev
		} else {
			s, e, name, ok = pt.find(sc, seg)
		}
		if !ok {
			return clauseHit{}, false
		}
		prev = e
		if i == 0 && c.named {
			switch n := strings.ToLower(name); {
			case n == "" || n == "this" || n == "that" || n == "same" || n == "other" || n == "any" || n == "every" || n == "each" || n == "a" || n == "an" || n == "the":
				return clauseHit{}, false
			case n == strings.ToLower(sc.t.Name):
				return clauseHit{}, false // the tool speaking of itself
			case sc.siblings[n]:
				m.Severity, why = warrant.Info, c.sibling
			}
		}
		a, b := p.span(at+s, at+e)
		phrases[i] = quote(p.orig[a:b])
		m.start, m.end = min(m.start, s), max(m.end, e)
	}
	for i, ph := range phrases {
		why = strings.ReplaceAll(why, "{"+string(rune('0'+i))+"}", ph)
	}
	m.Reason = why
	return m, true
}

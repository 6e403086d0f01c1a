package guest

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/run"
)

// etcdAuthFile records the id of the etcd container whose users EtcdAuth
// set up: a container it has not seen (new, or recreated) is set up again.
const etcdAuthFile = dns.ConfigDir + "/etcd-auth"

// Etcd is the local DNS's etcd as scripts in the VM reach it: its address
// on the kind network and marina's root user. The VM is the one place
// besides the kind network that reaches it.
type Etcd struct {
	Addr netip.Addr
	Root dns.Creds
}

// EtcdUser is one user EtcdAuth makes sure of, with the one role it has.
type EtcdUser struct {
	dns.Creds
	Grant dns.Grant
}

// etcdFuncs talk to etcd's JSON gateway at $etcd. Every request body
// comes on stdin from a quoted here-document, and the session token from
// a file (curl -H @file): no password or token is ever in a process's
// arguments, where any user of the VM could read it.
const etcdFuncs = `# etcd_call OP [TOKENFILE]: POST the JSON on stdin to $etcd/v3/OP and print
# the answer; fails, with the answer on stderr, on any status but 200.
etcd_call() {
	local out code auth=()
	if [ -n "${2-}" ]; then auth=(-H "@$2"); fi
	out=$(mktemp) || exit 1
	code=$(curl -sS --max-time 10 -o "$out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' "${auth[@]}" --data-binary @- "$etcd/v3/$1") || code=000
	if [ "$code" = 200 ]; then
		cat "$out"
		rm -f "$out"
		return 0
	fi
	{ echo "etcd $1: HTTP $code"; cat "$out"; echo; } >&2
	rm -f "$out"
	return 1
}
# etcd_ensure OP TOKENFILE: etcd_call, where "already exists" is done too.
etcd_ensure() {
	local err
	err=$(mktemp) || exit 1
	if etcd_call "$1" "$2" 2>"$err" >/dev/null || grep -q 'already exists' "$err"; then
		rm -f "$err"
		return 0
	fi
	cat "$err" >&2
	rm -f "$err"
	return 1
}
# etcd_login TOKENFILE: log in with the credentials on stdin and keep the
# session's token header in TOKENFILE.
etcd_login() {
	local tok
	tok=$(etcd_call auth/authenticate | sed -n 's/.*"token":"\([^"]*\)".*/\1/p') || return 1
	[ -n "$tok" ] || return 1
	printf 'Authorization: %s\n' "$tok" >"$1"
}
`

// line renders one command whose stdin is json, from a quoted
// here-document: cmd, then rest on the same line (redirections, "; then"),
// then the document.
func line(cmd, json, rest string) string {
	json += "\n"
	eof := delimiter(json)
	return cmd + " <<'" + eof + "'" + rest + "\n" + json + eof + "\n"
}

// call renders one request: fn (etcd_call, etcd_ensure) op [tok].
func call(fn, op, tok, json, rest string) string {
	cmd := fn + " " + op
	if tok != "" {
		cmd += " " + tok
	}
	return line(cmd, json, rest)
}

// tokenFile is where a script keeps root's session token.
const tokenFile = `"$etcdtmp/token"`

// header starts a script part that talks to etcd as root: the address,
// the functions, and a private folder (0700) for the token.
func (e Etcd) header() string {
	return "etcd=" + run.ShellQuote(dns.EtcdURL(e.Addr)) + "\n" + etcdFuncs + "etcdtmp=$(mktemp -d)\n"
}

// cleanup removes the token's folder.
const cleanup = "rm -rf \"$etcdtmp\"\n"

// login logs in as root, or runs onFail.
func (e Etcd) login(onFail string) string {
	return line("if ! etcd_login "+tokenFile, dns.AuthenticateBody(e.Root), "; then") + "\t" + onFail + "\nfi\n"
}

// EtcdAuth is the script part that sets up etcd's authentication and
// makes sure of reader and users, idempotently: it waits for etcd to
// answer (it may have just started), adds root and turns authentication on
// when it is off, then, as root, adds each user (setting its password when
// it was there) with its one role and range, and records the container it
// set up (etcdAuthFile). It ends the script with an error when etcd does
// not answer or refuses root.
func EtcdAuth(e Etcd, reader dns.Creds, users []EtcdUser) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	all := append([]EtcdUser{{Creds: reader, Grant: dns.ReaderGrant()}}, users...)
	for _, u := range all {
		if err := checkUser(u); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	b.WriteString(e.header())
	b.WriteString(`for i in $(seq 1 100); do
	if etcd_call auth/status <<<'{}' >"$etcdtmp/status" 2>"$etcdtmp/err"; then break; fi
	# etcd 3.6 tells the status only to a user once authentication is on.
	if grep -q 'user name is empty' "$etcdtmp/err"; then
		echo '{"enabled":true}' >"$etcdtmp/status"
		break
	fi
	if [ "$i" = 100 ]; then
		echo "the local DNS's etcd (` + dns.EtcdName + `, $etcd) does not answer: marina shell -- docker logs ` + dns.EtcdName + ` says why" >&2
		exit 1
	fi
	sleep 0.2
done
if ! grep -q '"enabled":true' "$etcdtmp/status"; then
`)
	b.WriteString(call("etcd_ensure", "auth/user/add", `""`, dns.UserAddBody(e.Root), ""))
	b.WriteString(call("etcd_call", "auth/user/grant", "", dns.GrantRoleBody(dns.RootUser, "root"), " >/dev/null"))
	b.WriteString("etcd_call auth/enable <<<'{}' >/dev/null\nfi\n")
	b.WriteString(e.login(`echo "the local DNS's etcd refuses marina's root user: it was set up with another ~/.marina/label.key; remove it (marina shell -- docker rm -f ` + dns.EtcdName + `) and run marina up, which starts it again (every cluster's ExternalDNS writes its names again within a minute)" >&2; exit 1`))
	for _, u := range all {
		b.WriteString(call("etcd_ensure", "auth/role/add", tokenFile, dns.RoleAddBody(u.Grant), ""))
		b.WriteString(call("etcd_call", "auth/role/grant", tokenFile, dns.GrantPermissionBody(u.Grant), " >/dev/null"))
		b.WriteString(call("etcd_ensure", "auth/user/add", tokenFile, dns.UserAddBody(u.Creds), ""))
		b.WriteString(call("etcd_call", "auth/user/changepw", tokenFile, dns.ChangePasswordBody(u.Creds), " >/dev/null"))
		b.WriteString(call("etcd_call", "auth/user/grant", tokenFile, dns.GrantRoleBody(u.User, u.Grant.Role), " >/dev/null"))
	}
	fmt.Fprintf(&b, "install -d -m 0755 %s\ndocker inspect -f '{{.Id}}' %s >%s\n", run.ShellQuote(dns.ConfigDir), dns.EtcdName, run.ShellQuote(etcdAuthFile))
	b.WriteString(cleanup)
	return b.String(), nil
}

// checkUser refuses a user whose name or password could not be what
// marina derives (so no value reaches a here-document it could end).
func checkUser(u EtcdUser) error {
	for _, s := range []string{u.User, u.Password, u.Grant.Role} {
		if s == "" || strings.ContainsAny(s, "\n\x00'\"\\") {
			return fmt.Errorf("etcd user %q: not a name and password marina makes (a marina bug)", u.User)
		}
	}
	if !strings.HasPrefix(u.Grant.Prefix, dns.Prefix) {
		return fmt.Errorf("etcd role %s: %q is not under %s (a marina bug)", u.Grant.Role, u.Grant.Prefix, dns.Prefix)
	}
	return nil
}

func (e Etcd) check() error {
	if !e.Addr.Is4() {
		return fmt.Errorf("the local DNS's etcd address %s is not IPv4 (a marina bug)", e.Addr)
	}
	return checkUser(EtcdUser{Creds: e.Root, Grant: dns.ReaderGrant()})
}

// rangeBody is a request for every key under prefix.
func rangeBody(prefix string) string {
	return fmt.Sprintf(`{"key":"%s","range_end":"%s"}`,
		base64.StdEncoding.EncodeToString([]byte(prefix)), base64.StdEncoding.EncodeToString([]byte(dns.RangeEnd(prefix))))
}

// DNSForget is the script part that removes, as root, every record under
// each zone and each cluster's etcd user and role, printing "@@ dns-forget
// <zone> ok|failed" per zone: a cluster's ExternalDNS dies with it and
// cannot clean up. It never fails the script (a VM whose local DNS is not
// running has nothing to forget). A zone that is no domain name, or a user
// that is no cluster's, is refused.
func DNSForget(e Etcd, zones, clusters []string) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	for _, z := range zones {
		if !config.IsDomain(z) {
			return "", fmt.Errorf("%q is not a DNS zone", z)
		}
	}
	if len(zones) == 0 && len(clusters) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString(e.header())
	b.WriteString(line("etcdok=1\nif ! etcd_login "+tokenFile, dns.AuthenticateBody(e.Root), "; then etcdok=0; fi"))
	for _, z := range zones {
		q := run.ShellQuote("@@ dns-forget " + z)
		b.WriteString(line(`if [ "$etcdok" = 1 ] && etcd_call kv/deleterange `+tokenFile, rangeBody(dns.KeyPrefix(z)), " >/dev/null 2>&1; then echo "+q+" ok; else echo "+q+" failed; fi"))
	}
	// After the records: a user change ends the session's token.
	for _, c := range clusters {
		if err := cluster.CheckName(c); err != nil {
			return "", err
		}
		u := dns.ClusterUser(c)
		b.WriteString("if [ \"$etcdok\" = 1 ]; then\n")
		b.WriteString(call("etcd_call", "auth/user/delete", tokenFile, dns.NameBody(u), " >/dev/null 2>&1 || true"))
		b.WriteString(call("etcd_call", "auth/role/delete", tokenFile, dns.NameBody(u), " >/dev/null 2>&1 || true"))
		b.WriteString("fi\n")
	}
	b.WriteString(cleanup)
	return b.String(), nil
}

// ParseForget reads DNSForget's output: the zones it could not clean.
func ParseForget(out string) []string {
	var failed []string
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "@@ dns-forget ")
		if z, st, _ := strings.Cut(rest, " "); ok && st == "failed" {
			failed = append(failed, z)
		}
	}
	return failed
}

// DNSRecords is the script that prints, as root, etcd's JSON answer for
// every record under domain.
func DNSRecords(e Etcd, domain string) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	if !config.IsDomain(domain) {
		return "", fmt.Errorf("%q is not a DNS zone", domain)
	}
	return "set -eu -o pipefail\n" + e.header() +
		e.login(`echo "the local DNS's etcd refuses marina's root user, or does not answer: marina up sets it up again" >&2; exit 1`) +
		call("etcd_call", "kv/range", tokenFile, rangeBody(dns.KeyPrefix(domain)), "") + cleanup, nil
}

// DNSRecordsProbe is the part of doctor's observation that prints, as
// root, every record under domain in a "@@ dns-records" section: in a
// subshell, so that an etcd that does not answer (or refuses root) ends
// the part alone, leaving the section out.
func DNSRecordsProbe(e Etcd, domain string) (string, error) {
	script, err := DNSRecords(e, domain)
	if err != nil {
		return "", err
	}
	return "dnsrec=$(mktemp)\nif ( " + script + ") >\"$dnsrec\" 2>/dev/null; then\n\techo \"@@ dns-records\"\n\tcat \"$dnsrec\"\n\techo\nfi\nrm -f \"$dnsrec\"\n", nil
}

// ClusterUser is cluster name's etcd user with its role.
func ClusterUser(pw dns.Passwords, name, domain string) (EtcdUser, error) {
	c, err := pw.Cluster(name)
	return EtcdUser{Creds: c, Grant: dns.ClusterGrant(name, domain)}, err
}

package dns

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/bcollard/marina/internal/cluster"
)

// The local DNS's etcd runs with authentication on, so that what one
// cluster's workloads can reach cannot change another cluster's names:
//
//   - root (etcd's own administrator) is marina's, used from the VM only:
//     setting up the users, listing and forgetting records;
//   - marina-dns-read reads /skydns/: the zone server, marina-dns;
//   - externaldns-<cluster> reads and writes its own zone's keys alone
//     (/skydns/<domain reversed>/<cluster>/): that cluster's ExternalDNS,
//     which reads nothing else either (ExternalDNSArgs), so a value another
//     cluster wrote cannot stop its sync.
//
// Anything without a password (every other workload on the kind network)
// is refused by etcd. The passwords are never stored: each is an HMAC of
// marina's label key (~/.marina/label.key, 0600) and the user's name, so
// marina can give the same one again at any time and a new key (which
// also recreates the DNS containers) gives new ones.

// Users and roles of the local DNS's etcd.
const (
	RootUser   = "root"
	ReaderUser = "marina-dns-read"
	readerRole = ReaderUser
)

// Creds are one etcd user's name and password.
type Creds struct {
	User     string
	Password string
}

// Passwords derives etcd passwords from marina's label key.
type Passwords struct{ key []byte }

// NewPasswords is the passwords of key; a key shorter than 16 bytes is an
// error (it would make guessable passwords).
func NewPasswords(key []byte) (Passwords, error) {
	if len(key) < 16 {
		return Passwords{}, fmt.Errorf("the label key is %d bytes, too short to derive passwords from: remove ~/.marina/label.key and run marina up", len(key))
	}
	return Passwords{key: key}, nil
}

func (p Passwords) derive(user string) Creds {
	m := hmac.New(sha256.New, p.key)
	fmt.Fprintf(m, "marina local DNS etcd user %s\n", user)
	return Creds{User: user, Password: base64.RawURLEncoding.EncodeToString(m.Sum(nil))}
}

// Root is etcd's administrator.
func (p Passwords) Root() Creds { return p.derive(RootUser) }

// Reader is marina-dns's read-only user.
func (p Passwords) Reader() Creds { return p.derive(ReaderUser) }

// Cluster is the ExternalDNS user of cluster name.
func (p Passwords) Cluster(name string) (Creds, error) {
	if err := cluster.CheckName(name); err != nil {
		return Creds{}, err
	}
	return p.derive(ClusterUser(name)), nil
}

// ClusterUser is the etcd user (and role) of a cluster's ExternalDNS.
func ClusterUser(name string) string { return "externaldns-" + name }

// Grant is one role and the key range it may use.
type Grant struct {
	Role string
	// Prefix is the key prefix the role covers; Write allows writing and
	// deleting there besides reading.
	Prefix string
	Write  bool
}

// ReaderGrant is marina-dns's: every record, read only.
func ReaderGrant() Grant { return Grant{Role: readerRole, Prefix: Prefix} }

// ClusterGrant is a cluster ExternalDNS's: its own zone, read and write.
func ClusterGrant(name, domain string) Grant {
	return Grant{Role: ClusterUser(name), Prefix: KeyPrefix(ClusterZone(name, domain)), Write: true}
}

// Request bodies of etcd's JSON gateway (/v3/auth/…): keys are base64, as
// the gateway wants them. Every value marina puts in one is JSON-encoded.

// UserAddBody adds c.
func UserAddBody(c Creds) string {
	return jsonBody(map[string]any{"name": c.User, "password": c.Password})
}

// ChangePasswordBody sets c's password.
func ChangePasswordBody(c Creds) string {
	return jsonBody(map[string]any{"name": c.User, "password": c.Password})
}

// AuthenticateBody logs c in.
func AuthenticateBody(c Creds) string {
	return jsonBody(map[string]any{"name": c.User, "password": c.Password})
}

// NameBody names a user or role (role add, user delete, role delete).
func NameBody(name string) string { return jsonBody(map[string]any{"name": name}) }

// RoleAddBody adds g's role.
func RoleAddBody(g Grant) string { return NameBody(g.Role) }

// GrantPermissionBody gives g's role its range.
func GrantPermissionBody(g Grant) string {
	perm := "READ"
	if g.Write {
		perm = "READWRITE"
	}
	return jsonBody(map[string]any{"name": g.Role, "perm": map[string]any{
		"permType":  perm,
		"key":       base64.StdEncoding.EncodeToString([]byte(g.Prefix)),
		"range_end": base64.StdEncoding.EncodeToString([]byte(RangeEnd(g.Prefix))),
	}})
}

// GrantRoleBody gives user role.
func GrantRoleBody(user, role string) string {
	return jsonBody(map[string]any{"user": user, "role": role})
}

func jsonBody(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return string(b)
}

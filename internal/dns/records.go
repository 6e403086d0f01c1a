package dns

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/config"
)

// Record is one name the local DNS answers.
type Record struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Cluster string `json:"cluster"`
	// Owner is the TXT registry's owner of the name (the cluster whose
	// ExternalDNS wrote it), "" when no ownership record was found.
	Owner string `json:"owner"`
	// Stopped is set when the cluster is stopped (marina cluster stop):
	// the name stays and answers, for an address nothing serves until the
	// cluster starts.
	Stopped bool `json:"stopped,omitempty"`
}

// etcdValue is the part of the coredns provider's record JSON marina reads.
type etcdValue struct {
	Host string `json:"host"`
	Text string `json:"text"`
}

// ParseRange reads etcd's answer to a range request over Prefix (its JSON
// gateway, keys and values base64) into the address records under domain,
// sorted by name. The values were written by every cluster's ExternalDNS,
// and anything that is not a record of marina's form is skipped: malformed
// are the keys (quoted, as they may hold anything) of the values that are
// not records at all, for the caller to report.
func ParseRange(js []byte, domain string) (recs []Record, malformed []string, err error) {
	var res struct {
		Kvs []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(js, &res); err != nil {
		return nil, nil, fmt.Errorf("read the local DNS records from etcd: %w", err)
	}
	var addrs []Record
	owners := map[string]string{}
	for _, kv := range res.Kvs {
		k, err1 := base64.StdEncoding.DecodeString(kv.Key)
		v, err2 := base64.StdEncoding.DecodeString(kv.Value)
		if err1 != nil || err2 != nil {
			malformed = append(malformed, strconv.Quote(kv.Key))
			continue
		}
		name, ok := keyName(string(k), domain)
		if !ok {
			if strings.HasPrefix(string(k), KeyPrefix(domain)) {
				malformed = append(malformed, strconv.Quote(string(k)))
			}
			continue
		}
		var val etcdValue
		if json.Unmarshal(v, &val) != nil {
			malformed = append(malformed, strconv.Quote(string(k)))
			continue
		}
		if val.Text != "" {
			// Anything on the kind network can write etcd: an owner is
			// shown only when it is a cluster name.
			if o := owner(val.Text); cluster.CheckName(o) == nil {
				owners[name] = o
			}
			continue
		}
		a, err := netip.ParseAddr(val.Host)
		if err != nil {
			continue // a CNAME target or junk: marina publishes addresses
		}
		addrs = append(addrs, Record{Name: name, Address: a.String(), Cluster: clusterOf(name, domain)})
	}
	for i, r := range addrs {
		// The TXT registry's ownership record of an A record web.x is a-web.x.
		first, rest, _ := strings.Cut(r.Name, ".")
		for _, n := range []string{"a-" + first + "." + rest, r.Name} {
			if o, ok := owners[n]; ok {
				addrs[i].Owner = o
				break
			}
		}
	}
	sort.Slice(addrs, func(i, j int) bool {
		if addrs[i].Name != addrs[j].Name {
			return addrs[i].Name < addrs[j].Name
		}
		return addrs[i].Address < addrs[j].Address
	})
	return addrs, malformed, nil
}

// keyName is the DNS name of an etcd key /skydns/<labels reversed>/<leaf>:
// the coredns provider adds one random leaf label under each name.
func keyName(key, domain string) (string, bool) {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return "", false
	}
	labels := strings.Split(rest, "/")
	if len(labels) < 2 {
		return "", false
	}
	labels = labels[:len(labels)-1]
	slices.Reverse(labels)
	name := strings.ToLower(strings.Join(labels, "."))
	if !config.IsDomain(name) || !strings.HasSuffix(name, "."+domain) {
		return "", false
	}
	return name, true
}

// clusterOf is the cluster label of name, the one just under domain.
func clusterOf(name, domain string) string {
	rest := strings.TrimSuffix(name, "."+domain)
	if i := strings.LastIndex(rest, "."); i >= 0 {
		return rest[i+1:]
	}
	return rest
}

// owner reads external-dns/owner=<id> from a TXT registry record.
func owner(txt string) string {
	for _, f := range strings.Split(strings.Trim(txt, `"`), ",") {
		if v, ok := strings.CutPrefix(f, "external-dns/owner="); ok {
			return v
		}
	}
	return ""
}

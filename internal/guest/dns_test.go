package guest

import (
	"reflect"
	"testing"
)

// The addons section comes back from the VM: only cluster names and
// domains are believed.
func TestParseAddons(t *testing.T) {
	got := parseAddons("dev dns=demo.internal dnsauth=1\n../x dns=demo.internal\nEvil dns=a.b\nold \nbad dns=$(rm)\nodd dns=demo.internal extra=1\n")
	// An empty record ("old ") is no record: up treats it as a cluster to bring over.
	want := map[string]Addons{"dev": {DNS: "demo.internal", Auth: true}, "bad": {}, "odd": {DNS: "demo.internal"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseAddons = %v, want %v", got, want)
	}
}

func TestParseForget(t *testing.T) {
	got := ParseForget("@@ dns-forget a.demo.internal ok\n@@ dns-forget b.demo.internal failed\nnoise\n")
	if !reflect.DeepEqual(got, []string{"b.demo.internal"}) {
		t.Errorf("ParseForget = %v", got)
	}
}

// Zones reach the script only as domain names (they are quoted and
// base64-encoded there as well).
func TestDNSScriptsRefuseHostileZones(t *testing.T) {
	etcd, _ := goldenEtcd(t)
	for _, z := range []string{"a'; rm -rf / #", "$(reboot).demo.internal", "dev.demo.internal\nreboot", "", "../x", "a b"} {
		if _, err := DNSForget(etcd, []string{"dev.demo.internal", z}, nil); err == nil {
			t.Errorf("DNSForget took %q", z)
		}
		if _, err := DNSRecords(etcd, z); err == nil {
			t.Errorf("DNSRecords took %q", z)
		}
	}
}

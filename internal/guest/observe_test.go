package guest

import (
	"net/netip"
	"strings"
	"testing"
)

// Output of `ip -4 -j addr show dev lima0` on an Ubuntu 24.04 guest, with a
// second address added by hand.
const twoAddrs = `[{"ifindex":2,"ifname":"lima0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"fq_codel","operstate":"UP","group":"default","txqlen":1000,"addr_info":[{"family":"inet","local":"192.168.64.3","prefixlen":24,"metric":100,"broadcast":"192.168.64.255","scope":"global","dynamic":true,"label":"lima0","valid_life_time":3590,"preferred_life_time":3590},{"family":"inet","local":"192.168.72.9","prefixlen":20,"scope":"global","label":"lima0","valid_life_time":4294967295,"preferred_life_time":4294967295}]}]`

func TestParseAddrsKeepsRealPrefix(t *testing.T) {
	got, err := ParseAddrs(twoAddrs)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("192.168.64.3/24"), netip.MustParsePrefix("192.168.72.9/20")}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ParseAddrs = %v, want %v", got, want)
	}
	if got, err := ParseAddrs("[]"); err != nil || len(got) != 0 {
		t.Errorf("no addresses: %v, %v", got, err)
	}
	if _, err := ParseAddrs("Device \"lima0\" does not exist."); err == nil {
		t.Error("garbage accepted")
	}
}

func TestParseObserve(t *testing.T) {
	st, err := parseObserve("@@ lima0\n" + twoAddrs + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if st.Lima0 != netip.MustParsePrefix("192.168.64.3/24") || len(st.Lima0All) != 2 {
		t.Errorf("state = %+v", st)
	}
	_, err = parseObserve("@@ lima0\n[]\n")
	if err == nil || !strings.Contains(err.Error(), "no IPv4 address") || !strings.Contains(err.Error(), "marina down && marina up") {
		t.Errorf("missing lima0 address: %v", err)
	}
}

func TestSections(t *testing.T) {
	s := sections("ignored\n@@ a\n1\n2\n@@ b\n@@ c\n3")
	if s["a"] != "1\n2\n" || s["b"] != "" || s["c"] != "3" || len(s) != 3 {
		t.Errorf("sections = %q", s)
	}
}

package app

import (
	"io"
	"strings"
	"testing"
)

func TestPick(t *testing.T) {
	rows := []ClusterRow{{Name: "a", Num: 1}, {Name: "b", Num: 2}, {Name: "c", Num: 3}}
	cases := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"2\n", "b", false},
		{"3 1,3\n", "c,a", false},
		{"all\n", "a,b,c", false},
		{"\n", "", true},  // nothing: cancel
		{"", "", true},    // end of input: cancel
		{"4\n", "", true}, // out of range: nothing deleted
		{"b\n", "", true},
	}
	for _, c := range cases {
		got, err := pick(strings.NewReader(c.in), io.Discard, rows)
		if strings.Join(got, ",") != c.want || (err != nil) != c.wantErr {
			t.Errorf("pick(%q) = %v, %v; want %s, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

package ui

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestPick(t *testing.T) {
	items := []string{"a", "b", "c"}
	cases := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"2\n", "[1]", nil},
		{"3 1,3\n", "[2 0]", nil}, // in the order given, each once
		{"all\n", "[0 1 2]", nil},
		{"\n", "[]", ErrCancelled},
		{"", "[]", ErrCancelled}, // end of input
		{"4\n", "[]", errors.New(`"4" is not one of the numbers 1 to 3`)},
		{"0\n", "[]", errors.New(`"0" is not one of the numbers 1 to 3`)},
		{"b\n", "[]", errors.New(`"b" is not one of the numbers 1 to 3`)},
	}
	for _, c := range cases {
		got, err := Pick(strings.NewReader(c.in), io.Discard, "Which?", items)
		if fmt.Sprint(got) != c.want && !(len(got) == 0 && c.want == "[]") {
			t.Errorf("Pick(%q) = %v; want %s", c.in, got, c.want)
		}
		if fmt.Sprint(err) != fmt.Sprint(c.wantErr) {
			t.Errorf("Pick(%q) error = %v; want %v", c.in, err, c.wantErr)
		}
	}
}
